"""The chunked (query-block, rematerialised) attention against the reference einsum:
causal, padded, packed-segment and tree masks, values and gradients, block sizes that
do and do not divide the length, inside the model; and its backward's memory, which
must not hold a [B, heads, L, L] buffer.

Tolerance: float32; each query's softmax runs over the same keys in both, so they
agree to float32 rounding (atol 1e-6 on outputs, 1e-5 on gradients)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.models import ModelConfig, Transformer
from mtrl.models.attention import cache_free_mask, chunked_attention, grouped_attention

from tests.models.test_attention import (MASKS, PADDED, SEGMENT_TOKENS, SEGMENTS, TREE_TOKENS,
                                         TREES, mask_from, qkv)

FACTORS = {"causal": (np.ones_like(PADDED), None), "padded": (PADDED, None),
           "segments": (SEGMENT_TOKENS, SEGMENTS), "tree": (TREE_TOKENS, TREES)}


def random_forest(rng, b, l):
    """Depth-first forests with padding: attend_end [B, L] and token_mask [B, L]."""
    ends = np.zeros((b, l), np.int32)
    real = np.zeros((b, l), bool)
    for row in range(b):
        n = int(rng.integers(l // 2, l + 1))
        parent = [-1] + [int(rng.integers(-1, i)) for i in range(1, n)]  # any earlier node
        # Depth-first order is the index order when each node's parent precedes it and
        # a subtree is contiguous: build it by appending children right after the path.
        order, children = [], {i: [] for i in range(-1, n)}
        for i in range(n):
            children[parent[i]].append(i)
        stack = list(reversed(children[-1]))
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(reversed(children[node]))
        position = {node: s for s, node in enumerate(order)}
        size = {}
        for node in reversed(order):
            size[node] = 1 + sum(size[c] for c in children[node])
        for node in order:
            ends[row, position[node]] = position[node] + size[node]
        real[row, :n] = True
        ends[row, n:] = np.arange(n, l) + 1
    return ends, real


@pytest.mark.parametrize("name", sorted(FACTORS))
@pytest.mark.parametrize("block", [1, 3, 128])
def test_chunked_equals_reference_values_and_gradients(name, block):
    token_mask, attend_end = (jnp.asarray(x) if x is not None else None for x in FACTORS[name])
    mask = jnp.asarray(MASKS[name])
    assert bool((cache_free_mask(token_mask, attend_end) == mask).all())
    q, k, v = qkv()
    got = chunked_attention(q, k, v, token_mask, attend_end, block)
    want = grouped_attention(q, [(k, v, mask)])
    np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)
    assert np.all(np.asarray(got)[~np.asarray(mask).any(-1)] == 0)  # padding: exactly 0
    weights = jnp.asarray(np.random.default_rng(1).normal(size=got.shape), jnp.float32)
    got_g = jax.grad(lambda q, k, v: jnp.sum(
        weights * chunked_attention(q, k, v, token_mask, attend_end, block)),
        argnums=(0, 1, 2))(q, k, v)
    want_g = jax.grad(lambda q, k, v: jnp.sum(weights * grouped_attention(q, [(k, v, mask)])),
                      argnums=(0, 1, 2))(q, k, v)
    for g, w in zip(got_g, want_g):
        assert bool(jnp.isfinite(g).all())
        np.testing.assert_allclose(g, w, atol=1e-5, rtol=0)


def test_chunked_on_random_forests_of_several_blocks():
    """Trees that cross block boundaries (L = 40, blocks of 16: the last one padded)."""
    rng = np.random.default_rng(4)
    b, l, kv, g, d = 3, 40, 2, 2, 8
    ends, real = random_forest(rng, b, l)
    mask = jnp.asarray(np.stack([mask_row(e, r) for e, r in zip(ends, real)]))
    q = jnp.asarray(rng.normal(size=(b, l, kv, g, d)), jnp.float32)
    k, v = (jnp.asarray(rng.normal(size=(b, kv, l, d)), jnp.float32) for _ in range(2))
    ends, real = jnp.asarray(ends), jnp.asarray(real)

    def chunked(q, k, v):
        return jnp.sum(jnp.sin(chunked_attention(q, k, v, real, ends, 16)))

    def reference(q, k, v):
        return jnp.sum(jnp.sin(grouped_attention(q, [(k, v, mask)])))

    np.testing.assert_allclose(chunked_attention(q, k, v, real, ends, 16),
                               grouped_attention(q, [(k, v, mask)]), atol=1e-6, rtol=0)
    for got, want in zip(jax.grad(chunked, (0, 1, 2))(q, k, v),
                         jax.grad(reference, (0, 1, 2))(q, k, v)):
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def mask_row(ends, real):
    """Query i attends key j iff j <= i < ends[j], both real (by loops, not broadcasts)."""
    l = len(ends)
    return np.array([[j <= i < ends[j] and real[i] and real[j] for j in range(l)]
                     for i in range(l)])


CONFIG = ModelConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_layers=2,
                     num_heads=4, num_kv_heads=2, head_dim=16, family="qwen2",
                     attention_bias=True, initializer_range=0.3)


@pytest.mark.parametrize("remat", ["none", "full"])
def test_model_forward_and_gradient_match_reference_on_trees(remat):
    """The whole cache-free forward, 'chunked' vs 'reference' (same weights), tree-packed
    bins: logits and parameter gradients."""
    graph, params = nnx.split(Transformer(CONFIG.replace(attention="chunked"),
                                          rngs=nnx.Rngs(0)))
    ref_graph = nnx.graphdef(nnx.eval_shape(
        lambda: Transformer(CONFIG.replace(attention="reference"), rngs=nnx.Rngs(0))))
    b, l = 3, 8
    tokens = jnp.asarray(np.random.default_rng(2).integers(0, 97, (b, l)), jnp.int32)
    kwargs = dict(token_mask=jnp.asarray(TREE_TOKENS), attend_end=jnp.asarray(TREES),
                  positions=jnp.asarray(np.tile(np.arange(l), (b, 1)), jnp.int32), remat=remat)

    # Random weights: a sum of squared normed states would be scale-invariant, with
    # gradients of rounding noise below the final norm.
    weights = jnp.asarray(np.random.default_rng(3).normal(size=(b, l, CONFIG.hidden_size)),
                          jnp.float32) * jnp.asarray(TREE_TOKENS)[..., None]

    def loss(g, p):
        hidden, _ = nnx.merge(g, p).hidden_states(tokens, **kwargs)
        return jnp.sum(weights * hidden), hidden

    (_, got), got_g = jax.value_and_grad(lambda p: loss(graph, p), has_aux=True)(params)
    (_, want), want_g = jax.value_and_grad(lambda p: loss(ref_graph, p), has_aux=True)(params)
    np.testing.assert_allclose(np.asarray(got)[TREE_TOKENS], np.asarray(want)[TREE_TOKENS],
                               atol=1e-5, rtol=0)
    for g, w in zip(jax.tree.leaves(got_g), jax.tree.leaves(want_g)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4 * float(jnp.abs(w).max()))


def test_backward_holds_no_full_score_buffer():
    """XLA's own count of the gradient's temporaries: the chunked path stays under one
    [B, heads, L, L] float32 buffer, a few [B, heads, 128, L] blocks (the reference
    holds several full buffers)."""
    b, l, kv, g, d = 1, 1024, 2, 2, 16
    q = jnp.zeros((b, l, kv, g, d), jnp.float32)
    k = v = jnp.zeros((b, kv, l, d), jnp.float32)
    real = jnp.ones((b, l), bool)
    full = b * kv * g * l * l * 4

    def temp_bytes(fn):
        grad = jax.jit(jax.grad(lambda q, k, v: jnp.sum(fn(q, k, v)), (0, 1, 2)))
        return grad.lower(q, k, v).compile().memory_analysis().temp_size_in_bytes

    chunked = temp_bytes(lambda q, k, v: chunked_attention(q, k, v, real, None))
    reference = temp_bytes(lambda q, k, v: grouped_attention(
        q, [(k, v, cache_free_mask(real, None))]))
    assert reference > 2 * full
    assert chunked < full and chunked <= 5 * full * 128 // l, (chunked, full)


def test_model_update_memory_is_linear_in_the_length():
    """XLA's count for the whole model's gradient, vmapped over two agents as the train
    step runs it, on causal tree bins: doubling L doubles the temporaries (quadratic
    attention would quadruple them). Guards the layer scan too, out of which XLA once
    hoisted every block's mask ([B, heads, L, L] booleans)."""
    graph, params = nnx.split(Transformer(CONFIG.replace(attention="chunked"),
                                          rngs=nnx.Rngs(0)))
    stacked = jax.tree.map(lambda x: jnp.stack([x, x]), params)

    def temp_bytes(length):
        tokens = jnp.zeros((2, length), jnp.int32)
        ends = jnp.full((2, length), length, jnp.int32)

        def loss(p):
            hidden, _ = nnx.merge(graph, p).hidden_states(
                tokens, attend_end=ends, token_mask=jnp.ones((2, length), bool))
            return jnp.sum(hidden)

        grad = jax.jit(jax.vmap(jax.grad(loss)))
        return grad.lower(stacked).compile().memory_analysis().temp_size_in_bytes

    short, long = temp_bytes(512), temp_bytes(1024)
    assert long < 2.2 * short, (short, long)
