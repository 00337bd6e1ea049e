"""RMSNorm and grouped attention against hand computations and a naive reference."""

import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.models.layers import RMSNorm, grouped_attention


def test_rms_norm_hand_computed():
    norm = RMSNorm(2, eps=1e-6, param_dtype=jnp.float32)
    norm.weight[...] = jnp.asarray([1.0, 2.0])
    # mean([3^2, 4^2]) = 12.5
    expected = np.asarray([3.0, 8.0]) / np.sqrt(12.5 + 1e-6)
    np.testing.assert_allclose(norm(jnp.asarray([[3.0, 4.0]]))[0], expected, rtol=1e-6)
    out = norm(jnp.asarray([3.0, 4.0], jnp.bfloat16))
    assert out.dtype == jnp.bfloat16
    with pytest.raises(ValueError, match="norm size"):
        norm(jnp.ones((2, 3)))


def naive_attention(q, k, v, mask):
    """Per-head loops, kv heads repeated (transformers' repeat_kv order), numpy float64;
    k, v [B, S, KV, D] (slot-first, independent of the head-first layout under test)."""
    b, l, kv, g, d = q.shape
    out = np.zeros((b, l, kv, g, d))
    for bi in range(b):
        for h in range(kv * g):
            qh = q[bi, :, h // g, h % g].astype(np.float64)
            kh, vh = k[bi, :, h // g].astype(np.float64), v[bi, :, h // g].astype(np.float64)
            scores = qh @ kh.T / np.sqrt(d)
            scores = np.where(mask[bi], scores, -np.inf)
            for i in range(l):
                if mask[bi, i].any():
                    p = np.exp(scores[i] - scores[i].max())
                    out[bi, i, h // g, h % g] = (p / p.sum()) @ vh
    return out


def test_grouped_attention_matches_naive_and_blocks_compose():
    rng = np.random.default_rng(0)
    b, l, s, kv, g, d = 2, 3, 5, 2, 3, 4
    q = rng.normal(size=(b, l, kv, g, d)).astype(np.float32)
    k = rng.normal(size=(b, s, kv, d)).astype(np.float32)
    v = rng.normal(size=(b, s, kv, d)).astype(np.float32)
    mask = rng.random((b, l, s)) < 0.6
    mask[0, 1] = False  # a query that sees nothing
    mask[1, 2] = True
    # grouped_attention takes head-first k, v [B, KV, S, D].
    kh, vh = k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)
    got = np.asarray(grouped_attention(jnp.asarray(q), [(jnp.asarray(kh), jnp.asarray(vh),
                                                         jnp.asarray(mask))]))
    np.testing.assert_allclose(got, naive_attention(q, k, v, mask), atol=1e-5)
    assert np.isfinite(got).all() and not got[0, 1].any()
    # Splitting the keys into two blocks (cache + new tokens) changes nothing.
    split = np.asarray(grouped_attention(jnp.asarray(q), [
        (jnp.asarray(kh[:, :, :2]), jnp.asarray(vh[:, :, :2]), jnp.asarray(mask[:, :, :2])),
        (jnp.asarray(kh[:, :, 2:]), jnp.asarray(vh[:, :, 2:]), jnp.asarray(mask[:, :, 2:]))]))
    np.testing.assert_allclose(split, got, atol=1e-6)


def test_grouped_attention_shape_checks():
    q = jnp.zeros((1, 2, 2, 2, 4))
    k = jnp.zeros((1, 2, 3, 4))  # [B, KV, S, D]
    with pytest.raises(ValueError, match="mask"):
        grouped_attention(q, [(k, k, jnp.ones((1, 2, 4), bool))])
    with pytest.raises(ValueError, match="k, v"):
        grouped_attention(q, [(jnp.zeros((1, 3, 3, 4)), jnp.zeros((1, 3, 3, 4)),
                               jnp.ones((1, 2, 3), bool))])
    with pytest.raises(ValueError, match="q must be"):
        grouped_attention(q[0], [(k, k, jnp.ones((1, 2, 3), bool))])
