"""loss.kl_in=reward: β·KL_i off each completion's return, before the baseline."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.credit import magrpo_advantages, row_advantages
from mtrl.losses import KLPenaltyConfig
from mtrl.models import PRESETS, Transformer
from mtrl.rollout import RolloutConfig, make_batch, rollout
from mtrl.training.config import parse
from mtrl.training.config import base_config
from mtrl.training.advantages.reference_pass import reward_kl_penalty, rows_to_turns
from mtrl.models.adapters import adapted_graphdef, init_adapters
from mtrl.models.lora import LoRAConfig
from mtrl.training.policy.train_state import base_layout, init_train_state
from mtrl.training.policy.logprobs import predicted_mask, sequence_logprobs
from tests.rollout.scripted import CharTokenizer, ScriptedBackend
from tests.training.signal_env import SignalEnv

import optax


def scripted_batch(mode="cross"):
    config = RolloutConfig(num_turns=2, num_generations=2, num_agents=2, joint_mode=mode,
                           termination_threshold=0.5, max_new_tokens=32, max_context=4096)
    return make_batch(rollout([0, 1], SignalEnv(2), ScriptedBackend(), CharTokenizer(),
                              config, jax.random.key(0)))


def test_rows_to_turns_inverts_the_row_gather():
    batch = scripted_batch()
    real = np.asarray(batch.row_turn) > 0
    values = np.random.default_rng(0).normal(size=(2, batch.num_rows)).astype(np.float32)
    back = np.asarray(row_advantages(rows_to_turns(values, batch, 2), batch.row_turn,
                                     batch.row_node, batch.row_sample))
    np.testing.assert_allclose(back[:, real], values[:, real])


def test_penalty_is_taken_off_the_return_before_the_baseline():
    rewards, expanded = [np.array([[1.0, 0.0]], np.float32)], [np.zeros((1, 2), bool)]
    penalty = [np.array([[[0.5, 0.0], [0.0, 0.0]]], np.float32)]  # agent 0, sample 0
    (adv,) = magrpo_advantages(rewards, expanded, gamma=1.0, mode="align", num_agents=2,
                               num_generations=2, penalty=penalty)
    np.testing.assert_allclose(adv[0], [[0.25, -0.25], [0.5, -0.5]])


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_row_kl_sums_the_estimator_over_loss_tokens(lora):
    batch = scripted_batch("align")
    model = dataclasses.replace(PRESETS.get("tiny"), num_layers=1, hidden_size=32,
                                intermediate_size=64, head_dim=8, num_heads=4, num_kv_heads=2)
    graphdef, params = nnx.split(Transformer(model, rngs=nnx.Rngs(0)))
    state = init_train_state([params, params], optax.sgd(0.1), shared=False,
                             keep_reference=True)
    policy_graph = graphdef
    if lora:  # trained adapters: the reference is still the base without them
        config = LoRAConfig(rank=2)
        adapters = jax.tree.map(lambda x: x + 0.3, init_adapters(model, config,
                                                                 jax.random.key(0)))
        state = init_train_state([adapters, adapters], optax.sgd(0.1), shared=False,
                                 keep_reference=True, lora=config,
                                 base=base_layout([params, params], shared=False))
        policy_graph = adapted_graphdef(model, config)
    ref = jnp.stack([sequence_logprobs(graphdef, params, batch.tokens[a], batch.token_mask[a])
                     for a in range(2)])
    mask = batch.loss_mask & jax.vmap(predicted_mask)(batch.token_mask)
    # The sampler's log-probs sit 0.1 above the reference on every loss token.
    batch = batch.replace(old_logprobs=jnp.where(mask, ref + 0.1, 0.0))
    kl = KLPenaltyConfig("k1", 2.0)
    penalty = reward_kl_penalty(policy_graph, state, batch, kl, num_tasks=2)
    expected = 2.0 * 0.1 * np.asarray(mask).sum(-1)  # β · Σ_t k1, k1 = log π − log π_ref
    back = np.asarray(row_advantages(penalty, batch.row_turn, batch.row_node,
                                     batch.row_sample))
    real = np.asarray(batch.row_turn) > 0
    np.testing.assert_allclose(back[:, real], expected[:, real], rtol=1e-4)


def test_kl_in_reward_moves_the_coefficient_out_of_the_loss():
    c = base_config()
    # k1 in the reward, k3 in the loss: the placements that regularise (losses.KL_PLACEMENTS).
    c.loss.kl_coef, c.loss.kl_in, c.loss.kl_estimator = 0.05, "reward", "k1"
    run = parse(c)
    assert run.loss.objective.kl.coef == 0.0 and run.loss.reward_kl.coef == 0.05
    c.loss.kl_in, c.loss.kl_estimator = "loss", "k3"
    run = parse(c)
    assert run.loss.objective.kl.coef == 0.05 and run.loss.reward_kl is None
