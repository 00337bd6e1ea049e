"""Registry entries carry their traits, and the consumers read them from the entry.

A loss or credit estimator registered here, in the test, and nowhere else gets the
behaviour its traits declare: an advantage-linear loss has its zero-advantage rows left
out of the packed forward, a clipped loss takes the clip settings, a pairwise loss moves
its rows in pairs. No list of names in the trainer has to learn about it.
"""

import dataclasses

import jax
import pytest
from flax import nnx

from mtrl.envs.registry import EnvSection

from mtrl.losses import (AGGREGATIONS, POLICY_LOSSES, PolicyLoss, PolicyObjectiveConfig,
                         PPOClipConfig, ReinforceConfig, ppo_loss, reinforce_loss)
from mtrl.models import Transformer
from mtrl.training.config.loss import build_objective
from mtrl.training.advantages.estimators import (CREDIT_ESTIMATORS, ESTIMATOR_KINDS, CreditConfig,
                                                Estimator, check_method, tree_estimators)
from mtrl.training.update.packing import pack_rows
from mtrl.training.config.root import check_episode_end
from mtrl.training.update.row_groups import group_size
from mtrl.training.update.train_state import init_train_state
from mtrl.training.update.train_step import make_train_step, zero_advantage_is_exact
from tests.training.config.test_objective_build import config_for
from tests.training.update.test_packing import CONFIG, recording_sgd, tree_minibatch


@pytest.mark.parametrize("name", POLICY_LOSSES.names())
def test_every_policy_loss_declares_its_traits(name):
    entry = POLICY_LOSSES.get(name)
    assert isinstance(entry, PolicyLoss)
    assert dataclasses.is_dataclass(entry.options) and entry.options().__hash__ is not None
    assert entry.aggregation in AGGREGATIONS
    assert isinstance(entry.clipped, bool) and isinstance(entry.advantage_linear, bool)
    assert entry.group_size in (1, 2)
    if entry.clipped:  # the clip settings build_objective passes are fields of its options
        fields = {f.name for f in dataclasses.fields(entry.options)}
        assert {"eps_low", "eps_high", "dual_clip"} <= fields


@pytest.mark.parametrize("name", CREDIT_ESTIMATORS.names())
def test_every_credit_estimator_declares_its_traits(name):
    entry = CREDIT_ESTIMATORS.get(name)
    assert isinstance(entry, Estimator)
    assert entry.kind in ESTIMATOR_KINDS and entry.paper
    assert isinstance(entry.needs, frozenset) and all(isinstance(k, str) for k in entry.needs)
    assert isinstance(entry.ends_at_success, bool)


def test_the_declared_traits_are_the_ones_the_trainer_used_to_list():
    """The lists the consumers held before the traits moved into the entries."""
    def having(trait):
        return [n for n in POLICY_LOSSES.names() if getattr(POLICY_LOSSES.get(n), trait)]
    assert having("clipped") == ["gspo", "gspo-token", "ppo", "turn-ratio"]
    assert having("advantage_linear") == ["gspo", "gspo-token", "ppo", "reinforce"]
    assert [n for n in POLICY_LOSSES.names() if POLICY_LOSSES.get(n).group_size == 2] == \
        ["refuel"]
    assert tree_estimators() == ("dr_grpo", "grpo", "magrpo", "rloo")
    assert [n for n in CREDIT_ESTIMATORS.names()
            if CREDIT_ESTIMATORS.get(n).ends_at_success] == ["ufo"]


def test_an_entry_must_declare_every_trait():
    with pytest.raises(TypeError, match="advantage_linear"):
        PolicyLoss(fn=reinforce_loss, options=ReinforceConfig, aggregation="token-mean",
                   clipped=False, group_size=1)
    with pytest.raises(ValueError, match="group_size must be an int >= 1"):
        PolicyLoss(fn=reinforce_loss, options=ReinforceConfig, aggregation="token-mean",
                   clipped=False, advantage_linear=True, group_size=0)
    with pytest.raises(ValueError, match="kind"):
        Estimator(fn=None, kind="forest", needs=frozenset(), ends_at_success=False, paper="x")


def toy_loss(monkeypatch, name, **traits):
    """Registers `name` for this test only (REINFORCE's function under other traits)."""
    entry = dict(fn=reinforce_loss, options=ReinforceConfig, aggregation="seq-mean-token-sum",
                 clipped=False, advantage_linear=False, group_size=1)
    entry.update(traits)
    if entry["clipped"]:
        entry.update(fn=ppo_loss, options=PPOClipConfig)
    monkeypatch.setitem(POLICY_LOSSES._entries, name, PolicyLoss(**entry))


@pytest.fixture(scope="module")
def models():
    graphdef, params0 = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(0)))
    _, params1 = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(1)))
    return graphdef, [params0, params1]


def test_a_registered_linear_loss_has_zero_advantage_rows_skipped_by_packing(monkeypatch, models):
    toy_loss(monkeypatch, "toy-linear", advantage_linear=True)
    toy_loss(monkeypatch, "toy-nonlinear", advantage_linear=False)
    graphdef, params = models
    rows, _ = tree_minibatch("align", 2, models, seed=3)  # every 5th row has A = 0
    full = int(pack_rows(rows.tokens, rows.token_mask, rows.loss_mask, "tree").token_mask.sum())
    packed = {}
    for name in ("toy-linear", "toy-nonlinear"):
        objective = PolicyObjectiveConfig(loss=name)
        step = make_train_step(graphdef, objective, recording_sgd(), num_agents=2,
                               shared=False, packing="tree")
        assert step.skip_zero_advantage == zero_advantage_is_exact(objective)
        state = init_train_state(params, recording_sgd(), shared=False, keep_reference=False)
        jax.block_until_ready(step(state, rows))
        packed[name] = step.last_packing["packed_tokens"]
    assert packed["toy-linear"] < full and packed["toy-nonlinear"] == full


def test_a_registered_clipped_loss_takes_the_clip_settings(monkeypatch):
    toy_loss(monkeypatch, "toy-clipped", clipped=True)
    toy_loss(monkeypatch, "toy-unclipped", clipped=False)
    built = build_objective(config_for("toy-clipped", eps_low=0.1))
    assert built.loss_config.eps_low == 0.1
    with pytest.raises(ValueError, match="'toy-unclipped' has no clip .*toy-clipped"):
        build_objective(config_for("toy-unclipped", eps_low=0.1))


def test_a_registered_pairwise_loss_moves_rows_in_pairs(monkeypatch):
    toy_loss(monkeypatch, "toy-pairs", group_size=2)
    assert group_size("toy-pairs") == 2 and group_size("reinforce") == 1
    env = type("Env", (), {"info_keys": frozenset()})()
    with pytest.raises(ValueError, match="num_generations must be even"):
        check_method(CreditConfig(), "toy-pairs", 3, env)
    check_method(CreditConfig(), "toy-pairs", 4, env)


def test_a_registered_estimator_brings_its_needs_and_episode_end(monkeypatch):
    magrpo = CREDIT_ESTIMATORS.get("magrpo")
    monkeypatch.setitem(CREDIT_ESTIMATORS._entries, "toy", Estimator(
        fn=magrpo.fn, kind="path", needs=frozenset({"toy_key"}), ends_at_success=True,
        paper="a test"))
    credit = CreditConfig(estimator="toy")
    env = type("Env", (), {"info_keys": frozenset({"correct"}), "ends_on_success": False})()
    with pytest.raises(ValueError, match=r"'toy' reads step info \['toy_key'\]"):
        check_method(credit, "reinforce", 2, env)
    with pytest.raises(ValueError, match="'toy' needs episodes that end at the first success"):
        check_episode_end(credit, EnvSection(name="code"))  # keeps revising solved branches
    check_episode_end(credit, EnvSection(name="code", end_on_success=True))
    with pytest.raises(ValueError, match="'reward' penalizes tree returns"):
        check_method(credit, "reinforce", 2, type(env)(), kl_in="reward")
