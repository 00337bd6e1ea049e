"""The fused decode-attention kernel against a float64 reference of its formula.

  out[b, h, g] = sum_s softmax_s(q[b, h, g] . k[b, h, s] / sqrt(D)) v[b, h, s]
  over visible slots s < limit; zeros where a row sees no slot.

Tolerances: float32 inputs, sums in float32 in another order than float64's and a
polynomial exp (relative error ~1e-7): 2e-6 relative to the largest |value|. bfloat16:
the probabilities and the output are rounded to bfloat16 (2^-8 relative each), so
3e-2 relative to the largest |value|, and within one bfloat16 rounding of the einsum
path (mtrl.models.attention.grouped_attention), which rounds at the same two places.
Needs the built library (.ci/run builds it); skipped with the reason without it.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.kernels import library
from mtrl.kernels.decode_attention import decode_attention
from mtrl.models.attention import grouped_attention

pytestmark = pytest.mark.skipif(not library.available(), reason=f"kernels: {library.load()}")


def reference(q, k, v, mask, limit):
    """float64 numpy: q [B, H, G, D], k, v [B, H, S, D], mask [B, S] -> [B, H, G, D]."""
    q, k, v = (np.asarray(jnp.asarray(x).astype(jnp.float32), np.float64) for x in (q, k, v))
    visible = np.asarray(mask).copy()
    visible[:, limit:] = False
    scores = np.einsum("bhgd,bhsd->bhgs", q, k) / np.sqrt(q.shape[-1])
    scores = np.where(visible[:, None, None], scores, -np.inf)
    top = scores.max(-1, keepdims=True)
    weights = np.where(visible[:, None, None], np.exp(scores - np.where(np.isfinite(top), top, 0)), 0)
    total = weights.sum(-1, keepdims=True)
    probs = np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)
    return np.einsum("bhgs,bhsd->bhgd", probs, v)


def inputs(b, h, g, s, d, dtype, seed, visible=0.7):
    rng = np.random.default_rng(seed)
    q, k, v = (jnp.asarray(rng.standard_normal(shape) * 2, dtype)
               for shape in [(b, h, g, d), (b, h, s, d), (b, h, s, d)])
    return q, k, v, jnp.asarray(rng.random((b, s)) < visible)


run = jax.jit(decode_attention)


@pytest.mark.parametrize("b,h,g,s,d,limit", [(3, 2, 3, 40, 16, 40), (5, 3, 1, 70, 64, 33),
                                             (1, 1, 4, 1, 8, 1), (4, 3, 3, 129, 64, 100)])
def test_float32_equals_the_formula(b, h, g, s, d, limit):
    q, k, v, mask = inputs(b, h, g, s, d, jnp.float32, seed=s)
    got = run(q, k, v, mask, limit)
    want = reference(q, k, v, mask, limit)
    assert got.shape == q.shape and got.dtype == jnp.float32
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * np.abs(want).max())


def test_bfloat16_matches_formula_and_einsum_path():
    q, k, v, mask = inputs(4, 3, 3, 96, 64, jnp.bfloat16, seed=1)
    got = np.asarray(run(q, k, v, mask, 96).astype(jnp.float32))
    want = reference(q, k, v, mask, 96)
    assert np.abs(got - want).max() <= 3e-2 * np.abs(want).max()
    einsum = grouped_attention(q[:, None], [(k, v, mask[:, None])])
    einsum = np.asarray(einsum[:, 0].astype(jnp.float32))
    # One bfloat16 rounding of the output apart at most (2^-8 of the value's magnitude).
    assert np.all(np.abs(got - einsum) <= 2 ** -7 * np.maximum(np.abs(einsum), 2 ** -6))


def test_slots_past_limit_are_never_read():
    q, k, v, mask = inputs(2, 3, 3, 50, 32, jnp.float32, seed=2)
    poisoned_k, poisoned_v = k.at[:, :, 20:].set(jnp.nan), v.at[:, :, 20:].set(jnp.inf)
    got = run(q, poisoned_k, poisoned_v, jnp.ones_like(mask), 20)  # mask admits them
    want = reference(q, k, v, np.ones(mask.shape, bool), 20)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * np.abs(want).max())


def test_row_without_visible_slot_is_zero_and_others_unaffected():
    q, k, v, mask = inputs(3, 2, 2, 30, 16, jnp.float32, seed=3)
    mask = mask.at[1].set(False)
    got = np.asarray(run(q, k, v, mask, 30))
    assert np.all(got[1] == 0)
    want = reference(q, k, v, mask, 30)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * np.abs(want).max())
    assert np.all(np.asarray(run(q, k, v, mask, 0)) == 0)  # limit 0: nothing to read


def test_large_score_gaps_stay_finite():
    # Scores 1e4 apart: the losers' weights underflow (exp of < -87), the winner takes all.
    q, k, v, mask = inputs(1, 1, 1, 8, 4, jnp.float32, seed=4, visible=1.0)
    k = k.at[0, 0, 5].set(q[0, 0, 0] * 1e4)
    got = np.asarray(run(q, k, v, mask, 8))
    np.testing.assert_allclose(got[0, 0, 0], np.asarray(v[0, 0, 5]), rtol=1e-6)


def test_bad_inputs_fail_in_one_line():
    q, k, v, mask = inputs(2, 3, 3, 10, 8, jnp.float32, seed=5)
    with pytest.raises(ValueError, match="q must be"):
        decode_attention(q[0], k, v, mask, 10)
    with pytest.raises(ValueError, match="k, v must be"):
        decode_attention(q, k[:, :2], v[:, :2], mask, 10)
    with pytest.raises(ValueError, match="mask must be bool"):
        decode_attention(q, k, v, mask.astype(jnp.int32), 10)
    with pytest.raises(ValueError, match="float32 or bfloat16"):
        decode_attention(q.astype(jnp.float16), k, v, mask, 10)
