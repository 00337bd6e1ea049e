"""The bf16 compute path against float32, on CPU: forward, log-probabilities, the loss
and the train step (padded and tree-packed), plus the optimizer's float32 master copy.

Tolerance. bf16 keeps 8 significand bits: one rounding is a relative error of at most
u = 2⁻⁹ (half an ulp). Mixed precision here rounds the embeddings, every layer's
activations and matmul inputs to bf16 (scores, softmax, norms and logits accumulate in
float32), so the float32 logits inherit a relative error of a few u per layer; over
logits spread across ±8 (this config's random init is scaled so they are, unlike a
0.02 init whose near-uniform logits would hide errors) that is a few hundredths of a
nat. Measured on this config: the sampled tokens' log-probabilities differ by at most
0.024 nats (mean 0.004), whole logit rows (every vocabulary entry, tails included) by
at most 0.050 (mean 0.006). We allow about twice that: 0.05 / 0.01 for log-probs,
0.1 / 0.015 for logits. A path that took a log-softmax in bf16 (ulp 2⁻⁴ at
|log p| ≈ 8) or dropped a float32 accumulation would exceed it, and each test also
checks that bf16 really ran (differences above 1e-5).
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from mtrl.losses import PolicyObjectiveConfig
from mtrl.models import ModelConfig, Transformer
from mtrl.models.head import token_logprobs
from mtrl.training.policy.logprobs import sequence_logprobs
from mtrl.training.update.minibatch import PolicyMinibatch
from mtrl.training.policy.optim import (Float32MasterState, OptimConfig, float32_master,
                                        make_optimizer)
from mtrl.training.policy.train_state import init_train_state
from mtrl.training.update.train_step import make_train_step

MAX_NATS, MEAN_NATS = 0.05, 0.01  # sampled tokens' log-probabilities
LOGIT_MAX, LOGIT_MEAN = 0.1, 0.015  # whole logit rows
CONFIG = ModelConfig(vocab_size=300, hidden_size=64, intermediate_size=128, num_layers=2,
                     num_heads=4, num_kv_heads=2, family="qwen2", attention_bias=True,
                     initializer_range=0.1)
MIXED = CONFIG.replace(dtype="bfloat16")  # float32 parameters, bf16 compute
B, L = 6, 24
LENGTHS = np.array([24, 20, 13, 7, 24, 16])


def graphdef(config):
    return nnx.graphdef(nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0))))


@pytest.fixture(scope="module")
def params():
    return nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(0)))[1]


@pytest.fixture(scope="module")
def rows():
    """tokens [B, L], right-padded token_mask; rows 0/4 and 1/5 share their first 10
    tokens (shared prefixes for the tree packer)."""
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, CONFIG.vocab_size, (B, L))
    tokens[4, :10], tokens[5, :10] = tokens[0, :10], tokens[1, :10]
    mask = np.arange(L)[None] < LENGTHS[:, None]
    return jnp.asarray(np.where(mask, tokens, 0), jnp.int32), jnp.asarray(mask)


def assert_close(got, want, mask, max_error=MAX_NATS, mean_error=MEAN_NATS):
    diff = np.abs(np.asarray(got) - np.asarray(want))[np.asarray(mask)]
    assert diff.max() <= max_error and diff.mean() <= mean_error, (diff.max(), diff.mean())
    assert diff.max() > 1e-5, "bf16 did not run: the outputs equal float32's"


def test_bf16_forward_keeps_float32_parameters_and_logits(params, rows):
    tokens, mask = rows
    model = nnx.merge(graphdef(MIXED), params)
    assert {x.dtype for x in jax.tree.leaves(params)} == {jnp.dtype(jnp.float32)}
    hidden, _ = model.hidden_states(tokens, token_mask=mask)
    assert hidden.dtype == jnp.bfloat16
    logits = model(tokens, token_mask=mask)
    assert logits.dtype == jnp.float32
    want = nnx.merge(graphdef(CONFIG), params)(tokens, token_mask=mask)
    assert_close(logits, want, mask, LOGIT_MAX, LOGIT_MEAN)


def test_bf16_logprobs_are_float32_and_close(params, rows):
    tokens, mask = rows
    got = sequence_logprobs(graphdef(MIXED), params, tokens, mask)
    want = sequence_logprobs(graphdef(CONFIG), params, tokens, mask)
    assert got.dtype == jnp.float32
    predicted = np.asarray(mask) & np.pad(np.asarray(mask)[:, :-1], ((0, 0), (1, 0)))
    assert_close(got, want, predicted)


def test_chunked_logprobs_are_float32_for_bf16_logits():
    """Whatever dtype the output projection returns, the log-softmax runs in float32.
    Small integer inputs make every bf16 logit exact, so float32 log-probabilities
    match to float32 precision while a bf16 log-softmax would be off by ~0.03 nats."""
    rng = np.random.default_rng(2)
    hidden = jnp.asarray(rng.integers(-2, 3, size=(10, 8)), jnp.bfloat16)
    table = jnp.asarray(rng.integers(-2, 3, size=(50, 8)), jnp.bfloat16)
    targets = jnp.asarray(rng.integers(0, 50, 10))
    got = token_logprobs(lambda h: h @ table.T, hidden, targets, chunk=4)
    assert got.dtype == jnp.float32
    z = hidden.astype(jnp.float32) @ table.astype(jnp.float32).T
    want = jnp.take_along_axis(jax.nn.log_softmax(z), targets[:, None], axis=-1)[:, 0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)


def minibatch(old_logprobs, tokens, mask):
    loss_mask = mask & (jnp.arange(L)[None] >= 4)  # a 4-token prompt, the rest trained
    advantages = jnp.asarray([1.0, -1.0, 0.5, -0.5, 2.0, -2.0])[:, None] * loss_mask
    return PolicyMinibatch(
        tokens=tokens[None], token_mask=mask[None], loss_mask=loss_mask[None],
        old_logprobs=jnp.where(loss_mask, old_logprobs, 0.0)[None],
        advantages=advantages[None], turn_index=loss_mask.astype(jnp.int32)[None])


@pytest.mark.parametrize("packing", ["none", "tree"])
def test_bf16_train_step_matches_float32(params, rows, packing):
    """One PPO + AdamW step from the same float32 parameters: the loss, gradient norm and
    updated weights of bf16 compute match float32's; the loss, the optimizer moments and
    the weights stay float32."""
    tokens, mask = rows
    old = sequence_logprobs(graphdef(CONFIG), params, tokens, mask) - 0.05  # ratio != 1
    batch = minibatch(old, tokens, mask)
    objective = PolicyObjectiveConfig(loss="ppo", aggregation="token-mean")
    optimizer = make_optimizer(OptimConfig(learning_rate=1e-3, max_grad_norm=None))
    results = {}
    for name, config in (("f32", CONFIG), ("bf16", MIXED)):
        state = init_train_state([params], optimizer, shared=False, keep_reference=False)
        step = make_train_step(graphdef(config), objective, optimizer, num_agents=1,
                               shared=False, packing=packing)
        results[name] = step(state, batch)
    (s32, m32), (s16, m16) = results["f32"], results["bf16"]
    assert m16["loss"].dtype == jnp.float32 and m16["finite"] == 1.0
    assert {x.dtype for x in jax.tree.leaves((s16.params, s16.opt_state))
            if jnp.issubdtype(x.dtype, jnp.floating)} == {jnp.dtype(jnp.float32)}
    assert not isinstance(s16.opt_state, Float32MasterState)  # float32 weights are the master
    # The loss is a token mean of ratio·A terms with |A| <= 2 and ratios e^(Δ log p).
    assert abs(float(m16["loss"]) - float(m32["loss"])) <= 2 * MAX_NATS
    assert abs(float(m16["loss"]) - float(m32["loss"])) > 1e-7
    np.testing.assert_allclose(float(m16["grad_norm"]), float(m32["grad_norm"]), rtol=0.05)
    # Adam's first step moves each weight by about η·sign(g); bf16 may flip the sign of
    # gradients near 0, so compare the step's direction over all weights.
    d32 = jnp.concatenate([(a - b).ravel() for a, b in zip(
        jax.tree.leaves(s32.params), jax.tree.leaves(params))])
    d16 = jnp.concatenate([(a - b).ravel() for a, b in zip(
        jax.tree.leaves(s16.params), jax.tree.leaves(params))])
    cosine = float(d32 @ d16 / (jnp.linalg.norm(d32) * jnp.linalg.norm(d16)))
    assert cosine > 0.9, cosine


def test_bf16_stored_weights_get_a_float32_master_copy():
    """Weights stored in bf16: AdamW alone rounds a small step away on every update; with
    the float32 master (make_optimizer) the steps accumulate and the stored weights
    follow the master, and the optimizer state is float32."""
    weights = {"kernel": jnp.full((64,), 1.0, jnp.bfloat16)}
    grads = {"kernel": jnp.ones((64,), jnp.bfloat16)}
    # Adam's step is η·sign(g) = 1e-3 per update, under half a bf16 ulp at 1.0 (2⁻⁸).
    config = OptimConfig(learning_rate=1e-3, max_grad_norm=None)
    plain = optax.adamw(1e-3, weight_decay=0.0)
    plain_state, plain_weights = plain.init(weights), weights
    master = make_optimizer(config)
    state, stored = master.init(weights), weights
    assert isinstance(state, Float32MasterState)
    assert {x.dtype for x in jax.tree.leaves(state)
            if jnp.issubdtype(x.dtype, jnp.floating)} == {jnp.dtype(jnp.float32)}
    for _ in range(10):
        updates, plain_state = plain.update(grads, plain_state, plain_weights)
        plain_weights = optax.apply_updates(plain_weights, updates)
        updates, state = master.update(grads, state, stored)
        stored = optax.apply_updates(stored, updates)
    assert float(plain_weights["kernel"][0]) == 1.0  # every step rounded away
    np.testing.assert_allclose(state.master["kernel"], 1.0 - 10 * 1e-3, rtol=1e-6)
    assert stored["kernel"].dtype == jnp.bfloat16
    np.testing.assert_array_equal(stored["kernel"], state.master["kernel"].astype(jnp.bfloat16))


def test_float32_master_leaves_float32_weights_untouched():
    """All-float32 weights: the same state structure and bit-identical updates as the
    wrapped optimizer (existing runs and checkpoints are unchanged)."""
    rng = np.random.default_rng(1)
    weights = {"kernel": jnp.asarray(rng.normal(size=(8, 4)), jnp.float32)}
    grads = {"kernel": jnp.asarray(rng.normal(size=(8, 4)), jnp.float32)}
    inner = optax.adamw(1e-2, weight_decay=0.1)
    wrapped = float32_master(inner)
    state = wrapped.init(weights)
    assert jax.tree.structure(state) == jax.tree.structure(inner.init(weights))
    got, _ = wrapped.update(grads, state, weights)
    want, _ = inner.update(grads, inner.init(weights), weights)
    np.testing.assert_array_equal(got["kernel"], want["kernel"])
