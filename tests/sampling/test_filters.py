"""Logit filters and the token draw against hand-computed references."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.sampling import SamplingConfig, filters

NEG_INF = -np.inf
# One compiled program per (shape, config) instead of op-by-op eager dispatch.
sample_jit = jax.jit(filters.sample_tokens, static_argnums=2)


def test_temperature_divides_logits():
    z = jnp.array([[1.0, -2.0, 4.0]])
    np.testing.assert_allclose(filters.scale_by_temperature(z, 0.5), [[2.0, -4.0, 8.0]])
    np.testing.assert_allclose(filters.scale_by_temperature(z, 1.0), z)
    with pytest.raises(ValueError, match="temperature"):
        filters.scale_by_temperature(z, 0.0)


def test_top_k_keeps_k_largest():
    z = jnp.array([0.1, 3.0, -1.0, 2.0, 0.5])
    np.testing.assert_array_equal(
        filters.top_k_filter(z, 2), [NEG_INF, 3.0, NEG_INF, 2.0, NEG_INF])
    np.testing.assert_array_equal(filters.top_k_filter(z, 1),
                                  [NEG_INF, 3.0, NEG_INF, NEG_INF, NEG_INF])
    # 0 and k >= V are no-ops.
    np.testing.assert_array_equal(filters.top_k_filter(z, 0), z)
    np.testing.assert_array_equal(filters.top_k_filter(z, 5), z)


def test_top_k_keeps_all_tokens_tied_at_kth_place():
    z = jnp.array([[1.0, 2.0, 2.0, 0.0], [5.0, 4.0, 3.0, 2.0]])
    out = filters.top_k_filter(z, 2)
    np.testing.assert_array_equal(out[0], [NEG_INF, 2.0, 2.0, NEG_INF])
    np.testing.assert_array_equal(out[1], [5.0, 4.0, NEG_INF, NEG_INF])
    out = filters.top_k_filter(jnp.array([3.0, 1.0, 1.0, 1.0]), 2)
    np.testing.assert_array_equal(out, [3.0, 1.0, 1.0, 1.0])


def test_top_p_smallest_prefix_with_mass_at_least_p():
    probs = np.array([0.1, 0.5, 0.15, 0.25])  # sorted: 0.5, 0.25, 0.15, 0.1
    z = jnp.log(jnp.asarray(probs, jnp.float32))
    keep = lambda p: np.isfinite(np.asarray(filters.top_p_filter(z, p)))
    # mass before each sorted token: 0, 0.5, 0.75, 0.9
    np.testing.assert_array_equal(keep(0.3), [False, True, False, False])
    np.testing.assert_array_equal(keep(0.5), [False, True, False, False])  # 0.5 >= 0.5
    np.testing.assert_array_equal(keep(0.6), [False, True, False, True])
    np.testing.assert_array_equal(keep(0.8), [False, True, True, True])
    np.testing.assert_array_equal(keep(0.95), [True, True, True, True])
    np.testing.assert_array_equal(keep(1.0), [True, True, True, True])
    # Tiny p still keeps the most likely token.
    np.testing.assert_array_equal(keep(1e-6), [False, True, False, False])
    kept = np.asarray(filters.top_p_filter(z, 0.6))
    np.testing.assert_allclose(kept[[1, 3]], np.log([0.5, 0.25]), rtol=1e-6)


def test_top_p_is_batched_and_keeps_ties():
    z = jnp.log(jnp.array([[0.4, 0.3, 0.3], [0.2, 0.2, 0.6]]))
    out = np.asarray(filters.top_p_filter(z, 0.5))
    # Row 0: 0.4 then a tie at 0.3; both tied tokens are kept.
    np.testing.assert_array_equal(np.isfinite(out[0]), [True, True, True])
    np.testing.assert_array_equal(np.isfinite(out[1]), [False, False, True])


def test_filter_logits_applies_temperature_then_top_k_then_top_p():
    z = jnp.log(jnp.array([0.05, 0.45, 0.2, 0.3]))
    cfg = SamplingConfig(temperature=0.5, top_k=3, top_p=0.7)
    out = np.asarray(filters.filter_logits(z, cfg))
    # Temperature 0.5 squares the probabilities: ∝ .2025, .09, .04, .0025 (tokens 1, 3, 2, 0).
    # Top-3 drops token 0; renormalised masses .609, .271, .120: the p=0.7 nucleus is {1, 3}.
    np.testing.assert_array_equal(np.isfinite(out), [False, True, False, True])
    np.testing.assert_allclose(out[[1, 3]], 2 * np.log([0.45, 0.3]), rtol=1e-6)
    log_q = jax.nn.log_softmax(out)
    np.testing.assert_allclose(np.exp(np.asarray(log_q)[[1, 3]]),
                               [0.2025 / 0.2925, 0.09 / 0.2925], rtol=1e-5)


def test_greedy_ties_go_to_lowest_id():
    z = jnp.array([[0.0, 2.0, 2.0], [5.0, 1.0, 5.0]])
    np.testing.assert_array_equal(filters.greedy_tokens(z), [1, 0])
    tokens, lp = sample_jit(jax.random.key(0), z, SamplingConfig(greedy=True))
    np.testing.assert_array_equal(tokens, [1, 0])
    np.testing.assert_array_equal(lp, [0.0, 0.0])


def test_sample_tokens_logprob_is_under_filtered_distribution():
    z = jnp.tile(jnp.log(jnp.array([0.1, 0.6, 0.3]))[None], (64, 1))
    cfg = SamplingConfig(top_k=2)
    tokens, lp = sample_jit(jax.random.key(3), z, cfg)
    tokens = np.asarray(tokens)
    assert set(tokens.tolist()) == {1, 2}  # token 0 is filtered out; 64 draws hit both others
    expected = np.where(tokens == 1, np.log(0.6 / 0.9), np.log(0.3 / 0.9))
    np.testing.assert_allclose(lp, expected, rtol=1e-5)
    raw = filters.token_log_probs(z, jnp.asarray(tokens))
    np.testing.assert_allclose(raw, np.log(np.where(tokens == 1, 0.6, 0.3)), rtol=1e-5)


def test_sample_rows_do_not_depend_on_batch_padding():
    z = jax.random.normal(jax.random.key(1), (3, 50))
    padded = jnp.concatenate([z, jnp.zeros((5, 50))], axis=0)
    cfg = SamplingConfig()
    a, _ = sample_jit(jax.random.key(7), z, cfg)
    b, _ = sample_jit(jax.random.key(7), padded, cfg)
    np.testing.assert_array_equal(a, b[:3])


def test_empirical_distribution_matches_softmax():
    """20k draws at temperature 1, top-p 1: frequencies match softmax(z).

    Each frequency f_v is a mean of n Bernoulli(p_v) draws, std sqrt(p_v (1-p_v) / n)
    <= 0.0036. A 5-sigma bound per token has a false-alarm chance below 6e-7 per token
    (< 1e-5 over 8 tokens) for a correct sampler; the key is fixed, so the test is
    deterministic. The same bound rejects temperature 0.8 (control below): its
    probabilities differ by up to ~0.06, far beyond 5 sigma.
    """
    n = 20_000
    probs = np.array([0.30, 0.20, 0.15, 0.12, 0.10, 0.07, 0.05, 0.01])
    z = jnp.tile(jnp.log(jnp.asarray(probs, jnp.float32))[None], (n, 1))
    tokens, _ = sample_jit(jax.random.key(2024), z, SamplingConfig())
    freq = np.bincount(np.asarray(tokens), minlength=8) / n
    bound = 5 * np.sqrt(probs * (1 - probs) / n)
    assert np.all(np.abs(freq - probs) <= bound), (freq, probs)
    # The test can fail: a sampler that used temperature 0.8 would be caught.
    wrong = np.exp(np.log(probs) / 0.8)
    wrong /= wrong.sum()
    assert np.any(np.abs(freq - wrong) > 5 * np.sqrt(wrong * (1 - wrong) / n))


def test_empirical_distribution_with_top_p_and_temperature():
    n = 20_000
    probs = np.array([0.5, 0.25, 0.15, 0.1])
    z = jnp.tile(jnp.log(jnp.asarray(probs, jnp.float32))[None], (n, 1))
    cfg = SamplingConfig(temperature=2.0, top_p=0.8)
    tokens, lp = sample_jit(jax.random.key(5), z, cfg)
    # T=2: q ∝ sqrt(p) = .7071, .5, .3873, .3162 -> .3691, .2610, .2022, .1651; mass before:
    # 0, .369, .630, .832 -> nucleus at p=.8 is the first three, renormalised.
    q = np.sqrt(probs[:3]) / np.sqrt(probs[:3]).sum()
    freq = np.bincount(np.asarray(tokens), minlength=4) / n
    assert freq[3] == 0.0
    assert np.all(np.abs(freq[:3] - q) <= 5 * np.sqrt(q * (1 - q) / n)), (freq, q)
    np.testing.assert_allclose(np.asarray(lp), np.log(q[np.asarray(tokens)]), rtol=1e-5)
    assert math.isclose(float(np.exp(np.log(q)).sum()), 1.0, rel_tol=1e-6)


def test_shape_checks():
    with pytest.raises(ValueError, match=r"\[B, V\]"):
        filters.sample_tokens(jax.random.key(0), jnp.zeros((4,)), SamplingConfig())
    with pytest.raises(ValueError, match="floating"):
        filters.top_k_filter(jnp.zeros((2, 3), jnp.int32), 1)
    with pytest.raises(ValueError, match="leading shape"):
        filters.token_log_probs(jnp.zeros((2, 3)), jnp.zeros((3,), jnp.int32))
