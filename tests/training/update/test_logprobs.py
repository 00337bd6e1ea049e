"""Chunked log-probabilities equal the full log-softmax: values and gradients, for chunk
sizes that do and do not divide the number of positions, tied and untied output layers."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.models import PRESETS, Transformer
from mtrl.training.update.logprobs import chunked_logprobs, sequence_logprobs

CONFIG = dataclasses.replace(PRESETS.get("tiny"), num_layers=2, hidden_size=32,
                             intermediate_size=64, head_dim=8, num_heads=4, num_kv_heads=2)


def full_logprobs(logits_fn, hidden, targets):
    """The reference: one [N, V] log-softmax, then the target's entry."""
    return jnp.take_along_axis(jax.nn.log_softmax(logits_fn(hidden), axis=-1),
                               targets[:, None], axis=-1)[:, 0]


@pytest.mark.parametrize("chunk", [1, 3, 7, 16, 64])
def test_chunked_equals_full_values_and_gradients(chunk):
    rng = np.random.default_rng(0)
    n, d, v = 16, 5, 11
    hidden = jnp.asarray(rng.normal(size=(n, d)), jnp.float32)
    table = jnp.asarray(rng.normal(size=(v, d)), jnp.float32)
    targets = jnp.asarray(rng.integers(0, v, size=n))
    weights = jnp.asarray(rng.normal(size=n), jnp.float32)

    def objective(fn, table, hidden):
        return jnp.sum(weights * fn(lambda h: h @ table.T, hidden, targets))

    chunked = lambda f, h, t: chunked_logprobs(f, h, t, chunk)
    np.testing.assert_allclose(chunked(lambda h: h @ table.T, hidden, targets),
                               full_logprobs(lambda h: h @ table.T, hidden, targets),
                               rtol=1e-6, atol=1e-6)
    got = jax.grad(lambda *a: objective(chunked, *a), argnums=(0, 1))(table, hidden)
    want = jax.grad(lambda *a: objective(full_logprobs, *a), argnums=(0, 1))(table, hidden)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_chunked_logprobs_of_a_hand_computed_row():
    # z = [0, ln 3] for one position: log p(target 1) = ln 3 − ln(1 + 3) = ln 0.75.
    got = chunked_logprobs(lambda h: h, jnp.asarray([[0.0, np.log(3.0)]]), jnp.asarray([1]))
    np.testing.assert_allclose(got, [np.log(0.75)], rtol=1e-6)


def test_chunked_logprobs_rejects_bad_shapes():
    with pytest.raises(ValueError, match="hidden must be"):
        chunked_logprobs(lambda h: h, jnp.zeros((2, 3, 4)), jnp.zeros((2,), int))
    with pytest.raises(ValueError, match="hidden must be"):
        chunked_logprobs(lambda h: h, jnp.zeros((2, 3)), jnp.zeros((3,), int))
    with pytest.raises(ValueError, match="chunk must be"):
        chunked_logprobs(lambda h: h, jnp.zeros((2, 3)), jnp.zeros((2,), int), 0)


@pytest.mark.parametrize("tie", [True, False])
def test_sequence_logprobs_equal_the_model_logits(tie):
    model = Transformer(dataclasses.replace(CONFIG, tie_word_embeddings=tie), rngs=nnx.Rngs(0))
    rng = np.random.default_rng(1)
    tokens = jnp.asarray(rng.integers(0, CONFIG.vocab_size, size=(3, 9)), jnp.int32)
    mask = jnp.asarray(np.arange(9)[None, :] < np.array([[9], [6], [4]]))
    graphdef, params = nnx.split(model)

    def reference(params):
        logits = nnx.merge(graphdef, params)(tokens, token_mask=mask)[:, :-1]
        logp = jnp.take_along_axis(jax.nn.log_softmax(logits, -1), tokens[:, 1:, None],
                                   -1)[..., 0]
        return jnp.pad(jnp.where(mask[:, 1:] & mask[:, :-1], logp, 0.0), ((0, 0), (1, 0)))

    for chunk in (4, 512):
        np.testing.assert_allclose(sequence_logprobs(graphdef, params, tokens, mask, chunk=chunk),
                                   reference(params), rtol=1e-5, atol=1e-5)
        got = jax.grad(lambda p: sequence_logprobs(graphdef, p, tokens, mask, remat="full",
                                                   chunk=chunk).sum())(params)
        want = jax.grad(lambda p: reference(p).sum())(params)
        for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
