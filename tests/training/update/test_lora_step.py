"""LoRA through the RL update: the train state holds adapters (and Adam moments for them
alone) over a frozen base that is also the KL reference; the jitted step trains the
adapters and never donates or changes the base; its gradient equals the gradient through
the merged weights (a second implementation); the sampler, given the trainer's published
policy, samples with the trainer's log-probabilities."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.models import PRESETS, Transformer
from mtrl.models.adapters import adapted_graphdef, adapter_count, init_adapters, merged_state
from mtrl.models.lora import LoRAConfig
from mtrl.sampling import BucketPolicy, Sampler, SamplingConfig
from mtrl.training.policy.logprobs import sequence_logprobs
from mtrl.training.policy.optim import make_optimizer
from mtrl.training.policy.train_state import (agent_merged, agent_params, agent_policy,
                                              agent_reference, base_layout, init_train_state)
from mtrl.training.update.train_step import _agent_objective, make_train_step
from tests.training.update.test_train_step import (MAGRPO, N, OPTIM, PPO, assert_trees_identical,
                                                   host_copy, make_minibatch, recording_sgd,
                                                   row_layout)

CONFIG = dataclasses.replace(PRESETS.get("tiny"), num_layers=1, hidden_size=32,
                             intermediate_size=64, head_dim=8, num_heads=4, num_kv_heads=2,
                             initializer_range=0.1)
LORA = LoRAConfig(rank=2, alpha=4.0, targets="q_proj,v_proj,o_proj,up_proj,down_proj")
GRAPH = adapted_graphdef(CONFIG, LORA)


def noisy(adapters, seed):
    """Adapters whose B is nonzero too: the policy then differs from the base."""
    leaves, treedef = jax.tree.flatten(adapters)
    keys = jax.random.split(jax.random.key(seed), len(leaves))
    return jax.tree.unflatten(treedef, [x + 0.2 * jax.random.normal(k, x.shape)
                                        for x, k in zip(leaves, keys)])


@pytest.fixture(scope="module")
def setup():
    base_graph, base0 = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(0)))
    _, base1 = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(1)))
    fresh = [init_adapters(CONFIG, LORA, jax.random.key(a)) for a in range(N)]
    token_mask, loss_mask = row_layout()
    rng = np.random.default_rng(0)
    tokens = np.where(token_mask, rng.integers(0, 256, (N,) + token_mask.shape), 0)
    return base_graph, [base0, base1], fresh, jnp.asarray(tokens, jnp.int32), token_mask, loss_mask


def lora_state(bases, adapters, optimizer, *, shared, keep_reference):
    per_agent = [adapters[0]] * N if shared else adapters
    return init_train_state(per_agent, optimizer, shared=shared, keep_reference=keep_reference,
                            lora=LORA, base=base_layout(bases[:1] if shared else bases, shared))


def test_separate_step_trains_adapters_over_an_untouched_base(setup):
    base_graph, bases, fresh, tokens, token_mask, loss_mask = setup
    state = lora_state(bases, fresh, make_optimizer(OPTIM), shared=False, keep_reference=True)
    # Adam's moments exist for the adapters alone: two per adapter entry per agent.
    opt_floats = sum(x.size for x in jax.tree.leaves(state.opt_state) if x.ndim > 1)
    assert opt_floats == 2 * N * adapter_count(fresh[0])
    base_before = host_copy(state.ref_params)
    rows = make_minibatch(GRAPH, [agent_policy(state, a) for a in range(N)], tokens, token_mask,
                          loss_mask)
    step = make_train_step(GRAPH, PPO, make_optimizer(OPTIM), num_agents=N, shared=False)
    base_arrays = jax.tree.leaves(state.ref_params)
    state, first = step(state, rows)
    # B = 0 at the start: the policy is its reference exactly, so the KL is 0.
    assert float(first["kl"]) == 0.0 and float(first["finite"]) == 1.0
    state, second = step(state, rows)
    assert float(second["kl"]) > 0.0 and step.num_compiles == 1
    # The base is read, never donated or changed: the same arrays, the same values, and
    # the models' own states it was stacked from are still alive.
    assert all(x is y for x, y in zip(jax.tree.leaves(state.ref_params), base_arrays))
    assert_trees_identical(state.ref_params, base_before)
    assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves(bases))
    moved = [np.abs(np.asarray(x) - np.asarray(y)).max()
             for x, y in zip(jax.tree.leaves(state.params),
                             jax.tree.leaves(jax.tree.map(lambda *xs: jnp.stack(xs), *fresh)))]
    assert min(moved) > 0  # every adapter factor trained (A as soon as B left 0)


def test_shared_step_gradient_equals_the_gradient_through_merged_weights(setup):
    """Second implementation: MAGRPO's objective in the base graph on W + s·A·B, by
    jax.grad through merged_state, against the recorded gradient of the LoRA step."""
    base_graph, bases, fresh, tokens, token_mask, loss_mask = setup
    adapters = noisy(fresh[0], seed=5)
    state = lora_state(bases, [adapters], recording_sgd(0.0), shared=True, keep_reference=False)
    policy = agent_policy(state, 0)
    rows = make_minibatch(GRAPH, [policy] * N, tokens, token_mask, loss_mask)
    step = make_train_step(GRAPH, MAGRPO, recording_sgd(0.0), num_agents=N, shared=True)
    state, metrics = step(state, rows)
    recorded = state.opt_state  # recording_sgd keeps the last gradient as its state

    def merged_objective(ad):
        weights = merged_state(bases[0], ad, LORA)
        losses = [_agent_objective(base_graph, MAGRPO, weights, None,
                                   jax.tree.map(lambda x: x[a], rows))[0] for a in range(N)]
        return jnp.mean(jnp.stack(losses))

    want = jax.grad(merged_objective)(adapters)
    assert float(metrics["loss"]) == pytest.approx(float(merged_objective(adapters)), rel=1e-5)
    for got, expected in zip(jax.tree.leaves(recorded), jax.tree.leaves(want)):
        assert np.abs(np.asarray(expected)).max() > 0
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=2e-4, atol=1e-7)


def test_policy_reference_and_merged_views_of_the_state(setup):
    base_graph, bases, fresh, tokens, token_mask, _ = setup
    adapters = [noisy(fresh[a], seed=a) for a in range(N)]
    state = lora_state(bases, adapters, make_optimizer(OPTIM), shared=False, keep_reference=True)
    for a in range(N):
        mask = jnp.asarray(token_mask)
        base_logp = sequence_logprobs(base_graph, bases[a], tokens[a], mask)
        # The reference: the base's function exactly (its adapters zeroed).
        np.testing.assert_allclose(sequence_logprobs(GRAPH, agent_reference(state, a),
                                                     tokens[a], mask), base_logp, atol=1e-6)
        policy_logp = sequence_logprobs(GRAPH, agent_policy(state, a), tokens[a], mask)
        merged = agent_merged(state, a)
        np.testing.assert_allclose(sequence_logprobs(base_graph, merged, tokens[a], mask),
                                   policy_logp, atol=2e-5)
        assert np.abs(np.asarray(policy_logp - base_logp)).max() > 1e-2
        assert_trees_identical(agent_params(state, a), adapters[a])
    saved = state.checkpointed()
    assert saved.ref_params is None and saved.lora == LORA
    assert saved.on_base(state.ref_params).ref_params is state.ref_params
    with pytest.raises(ValueError, match="LoRA needs both"):
        init_train_state(adapters, make_optimizer(OPTIM), shared=False, keep_reference=False,
                         lora=LORA)
    with pytest.raises(ValueError, match="leading axis of 2"):
        init_train_state(adapters, make_optimizer(OPTIM), shared=False, keep_reference=False,
                         lora=LORA, base=bases[0])


def test_sampler_log_probabilities_equal_the_trainers_under_lora(setup):
    """The trainer publishes agent_policy (base + adapters) to the sampler; what it
    samples carries the log-probabilities the update recomputes for those tokens."""
    base_graph, bases, fresh, _, _, _ = setup
    state = lora_state(bases, [noisy(fresh[0], seed=9)], make_optimizer(OPTIM), shared=True,
                       keep_reference=False)
    policy = agent_policy(state, 0)
    sampler = Sampler(nnx.merge(GRAPH, policy),
                      buckets=BucketPolicy(min_batch=4, min_length=16, cache_multiple=64))
    prompts = [[5, 17, 33], [100, 2, 9, 77, 41, 8, 9]]
    out = sampler.generate(prompts, jax.random.key(0), SamplingConfig(max_new_tokens=8),
                           num_samples=2).output
    rows = np.zeros((4, 16), np.int32)
    mask = np.zeros((4, 16), bool)
    for r, completion in enumerate(out.to_lists()):
        history = prompts[r // 2] + completion
        rows[r, :len(history)], mask[r, :len(history)] = history, True
    trainer = np.asarray(sequence_logprobs(GRAPH, policy, jnp.asarray(rows), jnp.asarray(mask)))
    base = np.asarray(sequence_logprobs(base_graph, bases[0], jnp.asarray(rows),
                                        jnp.asarray(mask)))
    for r, completion in enumerate(out.to_lists()):
        start = len(prompts[r // 2])
        got = np.asarray(out.logprobs[r, :len(completion)])
        np.testing.assert_allclose(got, trainer[r, start:start + len(completion)], atol=2e-5)
        assert np.abs(got - base[r, start:start + len(completion)]).max() > 1e-3
