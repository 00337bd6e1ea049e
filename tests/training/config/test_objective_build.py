"""The loss section's reader (read_loss): every policy loss trains every turn's tokens;
clip settings reach every clipped loss; names are checked with one-line errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.losses import POLICY_LOSSES, PolicyLossInputs, policy_objective
from mtrl.config import ConfigErrors, as_dict
from mtrl.training.config.loss import read_loss
from mtrl.training.config import base_config

# Every registered loss (a new one is tested here without being listed), and the
# underscore spelling of turn-ratio that configs also accept.
LOSSES = [*POLICY_LOSSES.names(), "turn_ratio"]
CLIPPED = [name for name in POLICY_LOSSES.names() if POLICY_LOSSES.get(name).clipped]


def build_objective(c):
    """The policy objective the config's loss section reads to (ConfigErrors if none)."""
    parts, lines = read_loss(dict(as_dict(c.loss)), c.rollout.num_turns)
    if lines:
        raise ConfigErrors(lines)
    return parts.objective


def config_for(loss, **fields):
    c = base_config()
    c.rollout.num_turns = 2
    c.loss.policy_loss = loss
    for k, v in fields.items():
        c.loss[k] = v
    return c


def two_turn_inputs():
    """Two rows (a sibling pair); tokens 1-3 are turn 1, tokens 5-7 turn 2."""
    mask = np.zeros((2, 8), bool)
    mask[:, 1:4] = mask[:, 5:8] = True
    turn = np.where(mask, np.where(np.arange(8) < 4, 0, 1), -1).astype(np.int32)
    rng = np.random.default_rng(0)
    old = jnp.asarray(-rng.uniform(0.5, 2.0, (2, 8)), jnp.float32)
    adv = jnp.asarray(np.where(mask, [[1.0], [-0.5]], 0.0), jnp.float32)
    return old, adv, jnp.asarray(mask), jnp.asarray(turn)


@pytest.mark.parametrize("loss", LOSSES)
def test_every_loss_trains_every_turns_tokens(loss):
    objective = build_objective(config_for(loss))
    old, adv, mask, turn = two_turn_inputs()

    def total(logp):
        inputs = PolicyLossInputs(logp=logp, old_logp=old, advantages=adv, mask=mask,
                                  turn_ids=turn)
        return policy_objective(inputs, objective)[0]

    # Off-policy by a little, so ratios are not exactly 1 (nothing hides behind a clip).
    grad = np.asarray(jax.grad(total)(old + 1e-5))
    trained = np.abs(grad) > 0
    # Regression: turn-ratio was built with one turn, so turn-2 tokens had no loss.
    assert trained[np.asarray(mask)].all(), np.argwhere(~trained & np.asarray(mask))
    assert not trained[~np.asarray(mask)].any()


def test_turn_ratio_gets_the_rollout_turns():
    assert build_objective(config_for("turn-ratio")).loss_config.num_turns == 2


def test_the_clipped_losses_are_the_ones_that_clip():
    # A subset: a newly registered clipped loss joins without editing this test.
    assert {"gspo", "gspo-token", "ppo", "turn-ratio"} <= set(CLIPPED)
    assert not {"reinforce", "refuel"} & set(CLIPPED)


@pytest.mark.parametrize("loss", CLIPPED)
def test_clip_settings_reach_every_clipped_loss(loss):
    cfg = build_objective(config_for(loss, eps_low=0.1, eps_high=0.3, dual_clip=3.0)).loss_config
    assert (cfg.eps_low, cfg.eps_high, cfg.dual_clip) == (0.1, 0.3, 3.0)


def test_unset_clip_keeps_each_losses_default():
    assert build_objective(config_for("ppo")).loss_config.eps_high == 0.28  # clip-higher
    assert build_objective(config_for("gspo")).loss_config.eps_low == 3e-4  # the paper's


@pytest.mark.parametrize("loss, fields, match", [
    ("ppx", {}, "config.loss.policy_loss: must be one of .*, got 'ppx'"),
    ("reinforce", {"eps_low": 0.1}, "config.loss.eps_low: set to 0.1, but only .*ppo.* read "
                                    "it and loss.policy_loss is 'reinforce'; leave it unset"),
    ("reinforce", {"refuel_eta": 2.0}, "config.loss.refuel_eta: set to 2.0, but only refuel "
                                       "reads it"),
])
def test_bad_loss_config_is_one_line(loss, fields, match):
    with pytest.raises(ValueError, match=match) as error:
        build_objective(config_for(loss, **fields))
    assert "\n" not in str(error.value)


def gspo_lengths_2_and_6():
    """Two sequences of 2 and 6 tokens, each with loss 1 per token at ratio 1 (A = −1)."""
    mask = np.zeros((2, 6), bool)
    mask[0, :2] = mask[1, :] = True
    zeros = jnp.zeros((2, 6), jnp.float32)
    adv = jnp.asarray(np.where(mask, -1.0, 0.0), jnp.float32)
    return PolicyLossInputs(logp=zeros, old_logp=zeros, advantages=adv, mask=jnp.asarray(mask))


@pytest.mark.parametrize("loss", ["gspo", "gspo-token"])
def test_gspo_brings_its_papers_aggregation(loss):
    # GSPO's objective is the sequence mean of token means: the 2-token and the 6-token
    # sequence weigh alike. Under seq-mean-token-sum the 6-token one got 3x the gradient.
    objective = build_objective(config_for(loss))
    assert objective.aggregation == "seq-mean-token-mean"
    inputs = gspo_lengths_2_and_6()

    def total(logp):
        return policy_objective(inputs.replace(logp=logp), objective)[0]

    grad = np.asarray(jax.grad(total)(inputs.logp))
    per_sequence = grad.sum(axis=1)
    np.testing.assert_allclose(per_sequence[0], per_sequence[1], rtol=1e-6)
    # d/dlogp_t of −(1/2)·Σ_i (1/|y_i|)·Σ_t s_i·A_i with A_i = −1 and s_i = 1: 1/2 per sequence.
    np.testing.assert_allclose(per_sequence, [0.5, 0.5], rtol=1e-6)


@pytest.mark.parametrize("loss, paper", [("reinforce", "seq-mean-token-sum"),
                                         ("refuel", "seq-mean-token-sum"),
                                         ("ppo", "token-mean"), ("turn_ratio", "token-mean")])
def test_each_loss_brings_its_papers_aggregation(loss, paper):
    assert build_objective(config_for(loss)).aggregation == paper


@pytest.mark.parametrize("loss", ["gspo", "reinforce", "ppo"])
def test_an_explicit_aggregation_is_kept(loss):
    for choice in ("seq-mean-token-sum", "token-mean"):
        assert build_objective(config_for(loss, aggregation=choice)).aggregation == choice


@pytest.mark.parametrize("estimator, place", [("k1", "loss"), ("k2", "reward"),
                                              ("k3", "reward")])
def test_a_kl_that_regularises_nothing_is_refused(estimator, place):
    with pytest.raises(ValueError, match=f"config.loss.kl_estimator: '{estimator}' in the "
                                         f"{place}") as error:
        build_objective(config_for("reinforce", kl_estimator=estimator, kl_in=place,
                                   kl_coef=0.1))
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("estimator, place", [("k1", "reward"), ("k2", "loss"), ("k3", "loss"),
                                              ("k1", "loss")])
def test_a_kl_that_regularises_is_built(estimator, place):
    coef = 0.0 if (estimator, place) == ("k1", "loss") else 0.1  # coef 0: reported only
    objective = build_objective(config_for("reinforce", kl_estimator=estimator, kl_in=place,
                                           kl_coef=coef))
    assert objective.kl.estimator == estimator


@pytest.mark.parametrize("field, value, match", [
    ("kl_estimator", "k4", "config.loss.kl_estimator: must be one of k1, k2, k3, got 'k4'"),
    ("kl_coef", -0.1, "config.loss.kl_coef: must be a number >= 0"),
])
def test_bad_kl_fields_name_themselves(field, value, match):
    with pytest.raises(ValueError, match=match) as error:
        build_objective(config_for("reinforce", **{field: value}))
    assert "\n" not in str(error.value)
