"""The chunked language-model head (mtrl/models/head.py) against the whole one: values
and gradients for chunk sizes that do and do not divide the token count, tied and
untied output layers, LoRA, bf16 compute and the oneDNN product; and the memory it
exists for (the compiled gradient holds no [N, V] logits)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.kernels import onednn_matmul
from mtrl.models import LoRAConfig, ModelConfig, PRESETS, Transformer
from mtrl.models.adapters import adapted_graphdef, init_adapters, with_adapters
from mtrl.models.head import LOGITS_CHUNK, token_logprobs
from mtrl.training.policy.logprobs import sequence_logprobs

CONFIG = dataclasses.replace(PRESETS.get("tiny"), num_layers=2, hidden_size=32,
                             intermediate_size=64, head_dim=8, num_heads=4, num_kv_heads=2,
                             initializer_range=0.1)
needs_kernel = pytest.mark.skipif(not onednn_matmul.usable(),
                                  reason=f"oneDNN kernel: {onednn_matmul.unusable_reason()}")


def full_logprobs(logits_fn, hidden, targets):
    """The reference: one [N, V] log-softmax, then the target's entry."""
    return jnp.take_along_axis(jax.nn.log_softmax(logits_fn(hidden), axis=-1),
                               targets[:, None], axis=-1)[:, 0]


@pytest.mark.parametrize("chunk", [0, 1, 3, 7, 16, 64])
def test_chunked_equals_full_values_and_gradients(chunk):
    rng = np.random.default_rng(0)
    n, d, v = 16, 5, 11
    hidden = jnp.asarray(rng.normal(size=(n, d)), jnp.float32)
    table = jnp.asarray(rng.normal(size=(v, d)), jnp.float32)
    targets = jnp.asarray(rng.integers(0, v, size=n))
    weights = jnp.asarray(rng.normal(size=n), jnp.float32)

    def objective(fn, table, hidden):
        return jnp.sum(weights * fn(lambda h: h @ table.T, hidden, targets))

    chunked = lambda f, h, t: token_logprobs(f, h, t, chunk)  # noqa: E731
    np.testing.assert_allclose(chunked(lambda h: h @ table.T, hidden, targets),
                               full_logprobs(lambda h: h @ table.T, hidden, targets),
                               rtol=1e-6, atol=1e-6)
    got = jax.grad(lambda *a: objective(chunked, *a), argnums=(0, 1))(table, hidden)
    want = jax.grad(lambda *a: objective(full_logprobs, *a), argnums=(0, 1))(table, hidden)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_a_hand_computed_row():
    # z = [0, ln 3] for one position: log p(target 1) = ln 3 − ln(1 + 3) = ln 0.75.
    for chunk in (0, 1, 4):
        got = token_logprobs(lambda h: h, jnp.asarray([[0.0, np.log(3.0)]]), jnp.asarray([1]),
                             chunk)
        np.testing.assert_allclose(got, [np.log(0.75)], rtol=1e-6)


def test_bad_shapes_and_chunks_are_refused():
    with pytest.raises(ValueError, match="hidden must be"):
        token_logprobs(lambda h: h, jnp.zeros((2, 3, 4)), jnp.zeros((2,), int))
    with pytest.raises(ValueError, match="hidden must be"):
        token_logprobs(lambda h: h, jnp.zeros((2, 3)), jnp.zeros((3,), int))
    for chunk in (-1, True, 2.0):
        with pytest.raises(ValueError, match="chunk must be"):
            token_logprobs(lambda h: h, jnp.zeros((2, 3)), jnp.zeros((2,), int), chunk)
        with pytest.raises(ValueError, match="logits_chunk must be"):
            CONFIG.replace(logits_chunk=chunk)
    assert ModelConfig(vocab_size=8, hidden_size=4, intermediate_size=4, num_layers=1,
                       num_heads=2, num_kv_heads=1).logits_chunk == LOGITS_CHUNK


def rows(batch=3, length=9, seed=1):
    rng = np.random.default_rng(seed)
    tokens = jnp.asarray(rng.integers(0, CONFIG.vocab_size, size=(batch, length)), jnp.int32)
    lengths = np.array([length, length - 3, 4, length - 1][:batch])[:, None]
    return tokens, jnp.asarray(np.arange(length)[None, :] < lengths)


def logprobs_and_grads(graphdef, params, tokens, mask, frozen=None):
    """sequence_logprobs (the model's own logits_chunk) and the gradient of a weighted
    sum of them with respect to `params` (LoRA: the adapters over `frozen`)."""
    weights = jnp.linspace(-1.0, 2.0, tokens.size).reshape(tokens.shape)

    def objective(p):
        state = p if frozen is None else with_adapters(frozen, p)
        logp = sequence_logprobs(graphdef, state, tokens, mask)
        return jnp.sum(weights * logp), logp

    (_, logp), grads = jax.value_and_grad(objective, has_aux=True)(params)
    return logp, grads


def assert_same(got, want, rtol, atol):
    np.testing.assert_allclose(got[0], want[0], rtol=rtol, atol=atol)
    for g, w in zip(jax.tree.leaves(got[1]), jax.tree.leaves(want[1])):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("tie", [True, False])
def test_the_model_config_chooses_the_chunk_float32(tie):
    """Chunks of 4 and 5 over 3 x 8 = 24 predicted positions (dividing and not) equal
    the whole head, tied and untied, to float32 summation order."""
    config = CONFIG.replace(tie_word_embeddings=tie)
    tokens, mask = rows()
    params = nnx.split(Transformer(config, rngs=nnx.Rngs(0)))[1]

    def run(chunk):
        graphdef = nnx.graphdef(nnx.eval_shape(
            lambda: Transformer(config.replace(logits_chunk=chunk), rngs=nnx.Rngs(0))))
        return logprobs_and_grads(graphdef, params, tokens, mask)

    whole = run(0)
    for chunk in (4, 5, 512):
        assert_same(run(chunk), whole, rtol=1e-5, atol=1e-6)


def test_chunked_head_under_lora_equals_the_whole_one():
    lora = LoRAConfig(rank=4, alpha=8.0)
    tokens, mask = rows()
    base = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(0)))[1]
    # B = 0 at init would make the adapters' gradient trivial in one factor only;
    # a nonzero B exercises both.
    adapters = jax.tree.map(lambda x: x + 0.05, init_adapters(CONFIG, lora, jax.random.key(1)))
    runs = {chunk: logprobs_and_grads(adapted_graphdef(CONFIG.replace(logits_chunk=chunk), lora),
                                      adapters, tokens, mask, frozen=base)
            for chunk in (0, 5)}
    assert_same(runs[5], runs[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("matmul", ["xla", pytest.param("onednn", marks=needs_kernel)])
def test_chunked_head_in_bf16_equals_the_whole_one(matmul):
    """bf16 compute (float32 weights): the chunked head multiplies where the whole one
    does, so the two agree far inside bf16's own error (tests/models/test_bf16.py
    allows 0.05 nats against float32); only the float32 sums' order differs."""
    config = CONFIG.replace(dtype="bfloat16", matmul=matmul, tie_word_embeddings=True)
    tokens, mask = rows()
    params = nnx.split(Transformer(config, rngs=nnx.Rngs(0)))[1]

    def run(chunk):
        graphdef = nnx.graphdef(nnx.eval_shape(
            lambda: Transformer(config.replace(logits_chunk=chunk), rngs=nnx.Rngs(0))))
        return logprobs_and_grads(graphdef, params, tokens, mask)

    # Measured with XLA: chunk 5 vs whole 5e-7 nats and 0.0012 relative gradient
    # norm, where bf16 vs float32 is 0.009 nats and 0.0087 (the two programs' fusions
    # round the bf16 cotangents of the layers differently).
    if matmul == "onednn":  # the custom call is in the chunked program
        graphdef = nnx.graphdef(nnx.eval_shape(
            lambda: Transformer(config.replace(logits_chunk=5), rngs=nnx.Rngs(0))))
        text = jax.jit(lambda p: sequence_logprobs(graphdef, p, tokens, mask)).lower(
            params).as_text()
        assert onednn_matmul.TARGET in text
    chunked, whole = run(5), run(0)
    np.testing.assert_allclose(chunked[0], whole[0], rtol=0, atol=1e-4)
    assert relative(chunked[1], whole[1]) < 4e-3


def relative(got, want):
    """‖got − want‖ / ‖want‖ over every leaf of two gradient trees."""
    pairs = list(zip(jax.tree.leaves(got), jax.tree.leaves(want)))
    return (sum(float(jnp.sum((g - w) ** 2)) for g, w in pairs)
            / sum(float(jnp.sum(w ** 2)) for _, w in pairs)) ** 0.5


def test_the_compiled_gradient_holds_no_whole_logits():
    """What the chunking is for: with V = 4096 and 8 x 64 = 504 predicted positions,
    the whole head's gradient program needs more than twice the [N, V] float32 logits
    (8.3 MB); the chunked one's temporaries stay below one such array (XLA's own
    memory analysis of the compiled program, not a timing)."""
    config = CONFIG.replace(vocab_size=4096)
    tokens = jnp.asarray(np.random.default_rng(0).integers(0, 4096, (8, 64)), jnp.int32)
    mask = jnp.ones_like(tokens, bool)
    params = nnx.split(Transformer(config, rngs=nnx.Rngs(0)))[1]
    whole_logits = 8 * 63 * 4096 * 4

    def temp_bytes(chunk):
        graphdef = nnx.graphdef(nnx.eval_shape(
            lambda: Transformer(config.replace(logits_chunk=chunk), rngs=nnx.Rngs(0))))
        grad = jax.jit(jax.grad(lambda p: sequence_logprobs(graphdef, p, tokens, mask).sum()))
        return grad.lower(params).compile().memory_analysis().temp_size_in_bytes

    # Measured: 19.5 MB whole (logits, softmax and cotangent), 5.3 MB in chunks of 16
    # or 64 (the layers' activations and the gradients; no [N, V] array).
    assert temp_bytes(0) > 2 * whole_logits
    assert temp_bytes(64) < whole_logits
