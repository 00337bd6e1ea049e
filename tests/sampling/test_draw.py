"""The sampled token draw: inverse transform sampling in two levels."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.sampling import draw

inverse_jit = jax.jit(draw.inverse_cdf_index)


def reference_index(weights: np.ndarray, u: np.ndarray) -> np.ndarray:
    """float64 sequential inverse CDF: the first i with cumsum_i > u * total."""
    cum = np.cumsum(weights.astype(np.float64), axis=-1)
    return np.array([int(np.searchsorted(c, ui * c[-1], side="right")) for c, ui in zip(cum, u)])


def test_inverse_cdf_by_hand():
    # weights 1, 0, 2, 1 (total 4): cumulative 1, 1, 3, 4; the draw is the first index
    # whose cumulative mass exceeds u * 4 and whose weight is positive.
    w = jnp.tile(jnp.asarray([[1.0, 0.0, 2.0, 1.0]]), (6, 1))
    u = jnp.asarray([0.0, 0.24, 0.25, 0.74, 0.75, 0.999])
    np.testing.assert_array_equal(inverse_jit(w, u), [0, 0, 2, 2, 3, 3])


def test_inverse_cdf_matches_float64_reference_across_blocks():
    rng = np.random.default_rng(1)
    vocab = 3 * draw.BLOCK + 37  # four blocks, the last one padded
    w = rng.random((64, vocab)).astype(np.float32) ** 4
    w[rng.random(w.shape) < 0.5] = 0.0
    u = rng.random(64).astype(np.float32)
    got = np.asarray(inverse_jit(jnp.asarray(w), jnp.asarray(u)))
    want = reference_index(w, u)
    # Away from a boundary (|cumulative mass - target| > 1e-4 of the total) the two agree.
    cum = np.cumsum(w.astype(np.float64), axis=-1)
    target = u * cum[:, -1]
    clear = np.array([np.min(np.abs(c - t)) > 1e-4 * c[-1] for c, t in zip(cum, target)])
    assert clear.sum() >= 60
    np.testing.assert_array_equal(got[clear], want[clear])
    assert np.all(w[np.arange(64), got] > 0)


def test_never_draws_a_zero_weight_even_at_the_ends():
    rng = np.random.default_rng(2)
    vocab = 2 * draw.BLOCK + 5
    w = np.zeros((8, vocab), np.float32)
    for row in range(8):  # a few positive tokens, some in the padded last block
        w[row, rng.choice(vocab, size=3, replace=False)] = rng.random(3) + 0.1
    w[0, :] = 0.0
    w[0, vocab - 1] = 1.0  # only the very last token
    u = np.array([0.0, 1 - 2 ** -24, 0.5, 0.999999, 0.0, 0.3, 1 - 2 ** -24, 0.7], np.float32)
    got = np.asarray(inverse_jit(jnp.asarray(w), jnp.asarray(u)))
    assert np.all(w[np.arange(8), got] > 0), got
    assert got[0] == vocab - 1


def test_empirical_frequencies_match_the_weights():
    vocab = draw.BLOCK + 10
    w = np.zeros(vocab, np.float32)
    w[[0, draw.BLOCK - 1, draw.BLOCK, vocab - 1]] = [0.1, 0.2, 0.3, 0.4]
    n = 20_000
    u = jax.random.uniform(jax.random.key(0), (n,))
    got = np.asarray(inverse_jit(jnp.tile(jnp.asarray(w), (n, 1)), u))
    freq = np.bincount(got, minlength=vocab)[[0, draw.BLOCK - 1, draw.BLOCK, vocab - 1]] / n
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.3, 0.4], atol=0.015)  # ~4 sigma at n


def test_shape_checks():
    with pytest.raises(ValueError, match="weights"):
        draw.inverse_cdf_index(jnp.ones((4,)), jnp.zeros((4,)))
    with pytest.raises(ValueError, match="weights"):
        draw.inverse_cdf_index(jnp.ones((2, 4)), jnp.zeros((3,)))
