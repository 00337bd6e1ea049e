"""KL estimators: the worked example, exact expectations, masking and numerics."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.losses import (KL_ESTIMATORS, KLPenaltyConfig, kl_k1, kl_k2, kl_k3, masked_kl,
                         sequence_kl)


def test_registry_names():
    assert KL_ESTIMATORS.names() == ("k1", "k2", "k3")
    assert KL_ESTIMATORS.get("k3") is kl_k3


def test_worked_example():
    # docs/design.md section 4: π = 0.5, π_ref = 0.25.
    logp, ref_logp = jnp.log(jnp.array([0.5])), jnp.log(jnp.array([0.25]))
    np.testing.assert_allclose(kl_k1(logp, ref_logp), [0.693147], atol=1e-6)
    np.testing.assert_allclose(kl_k2(logp, ref_logp), [0.240227], atol=1e-6)
    np.testing.assert_allclose(kl_k3(logp, ref_logp), [0.193147], atol=1e-6)


def test_k1_and_k3_are_unbiased_for_a_categorical():
    # E_{y~π}[k] summed exactly over a small vocabulary equals KL(π ‖ π_ref) for k1 and k3;
    # k2's expectation is the (different) ½ E[(log r)²].
    rng = np.random.default_rng(0)
    pi = rng.dirichlet(np.ones(6))
    pi_ref = rng.dirichlet(np.ones(6))
    exact_kl = float(np.sum(pi * np.log(pi / pi_ref)))
    logp, ref_logp = jnp.log(jnp.asarray(pi, jnp.float32)), jnp.log(jnp.asarray(pi_ref, jnp.float32))
    assert float(jnp.sum(pi * kl_k1(logp, ref_logp))) == pytest.approx(exact_kl, rel=1e-5)
    assert float(jnp.sum(pi * kl_k3(logp, ref_logp))) == pytest.approx(exact_kl, rel=1e-5)
    half_square = 0.5 * float(np.sum(pi * np.log(pi_ref / pi) ** 2))
    assert float(jnp.sum(pi * kl_k2(logp, ref_logp))) == pytest.approx(half_square, rel=1e-5)


def test_k2_k3_nonnegative_and_zero_on_policy():
    rng = np.random.default_rng(1)
    logp = jnp.asarray(-rng.uniform(0, 5, 50), jnp.float32)
    ref_logp = jnp.asarray(-rng.uniform(0, 5, 50), jnp.float32)
    assert bool(jnp.all(kl_k2(logp, ref_logp) >= 0)) and bool(jnp.all(kl_k3(logp, ref_logp) >= 0))
    for fn in (kl_k1, kl_k2, kl_k3):
        np.testing.assert_array_equal(fn(logp, logp), 0.0)


def test_k3_is_finite_for_huge_log_ratios():
    # log r = ±1000 would overflow exp in float32; the clip to ±20 keeps it finite.
    logp = jnp.array([-1000.0, 0.0], jnp.float32)
    ref_logp = jnp.array([0.0, -1000.0], jnp.float32)
    k3 = kl_k3(logp, ref_logp)
    assert bool(jnp.all(jnp.isfinite(k3)))
    np.testing.assert_allclose(k3, [np.expm1(20.0) - 20.0, np.expm1(-20.0) + 20.0], rtol=1e-6)
    grads = jax.grad(lambda x: jnp.sum(kl_k3(x, ref_logp)))(logp)
    assert bool(jnp.all(jnp.isfinite(grads)))


def test_gradients_match_formulas():
    # d/dlogp: k1 → 1, k2 → −log r, k3 → 1 − r (log r = ref − logp).
    logp = jnp.array([-1.0, -2.0, -0.3], jnp.float32)
    ref_logp = jnp.array([-1.5, -1.0, -0.3], jnp.float32)
    log_r = np.asarray(ref_logp - logp)
    np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(kl_k1(x, ref_logp)))(logp), 1.0)
    np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(kl_k2(x, ref_logp)))(logp), -log_r,
                               rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(kl_k3(x, ref_logp)))(logp),
                               1.0 - np.exp(log_r), rtol=1e-6)


def test_masked_kl_ignores_masked_positions():
    logp = jnp.array([-1.0, -2.0, -0.5, -3.0], jnp.float32)
    ref_logp = jnp.array([-1.5, -1.0, -0.3, -3.0], jnp.float32)
    mask = jnp.array([True, False, True, False])
    bad_logp = logp.at[1].set(jnp.inf).at[3].set(-1e30)
    bad_ref = ref_logp.at[1].set(-jnp.inf).at[3].set(1e30)
    for name in KL_ESTIMATORS:
        kl = jax.jit(masked_kl, static_argnums=3)
        clean = kl(logp, ref_logp, mask, name)
        dirty = kl(bad_logp, bad_ref, mask, name)
        np.testing.assert_array_equal(clean, dirty)
        np.testing.assert_array_equal(clean[~np.asarray(mask)], 0.0)
        grad = jax.jit(jax.grad(lambda x: jnp.sum(masked_kl(x, bad_ref, mask, name))))(bad_logp)
        np.testing.assert_array_equal(grad[~np.asarray(mask)], 0.0)
        assert bool(jnp.all(jnp.isfinite(grad)))


def test_sequence_kl_sum_and_mean():
    logp = jnp.log(jnp.array([0.5, 0.5, 0.9], jnp.float32))
    ref_logp = jnp.log(jnp.array([0.25, 0.5, 0.1], jnp.float32))
    mask = jnp.array([True, True, False])
    assert float(sequence_kl(logp, ref_logp, mask)) == pytest.approx(0.693147, abs=1e-6)
    assert float(sequence_kl(logp, ref_logp, mask, estimator="k3", reduction="mean")) == \
        pytest.approx(0.193147 / 2, abs=1e-6)
    assert float(sequence_kl(logp, ref_logp, jnp.zeros(3, bool), reduction="mean")) == 0.0


def test_sequence_kl_under_jit_and_vmap():
    rng = np.random.default_rng(2)
    logp = jnp.asarray(-rng.uniform(0.1, 3, (5, 8)), jnp.float32)
    ref_logp = jnp.asarray(-rng.uniform(0.1, 3, (5, 8)), jnp.float32)
    mask = jnp.asarray(rng.random((5, 8)) < 0.6)
    for name in KL_ESTIMATORS:
        fn = jax.jit(jax.vmap(lambda a, b, m: sequence_kl(a, b, m, estimator=name)))
        expected = [float(sequence_kl(logp[i], ref_logp[i], mask[i], estimator=name))
                    for i in range(5)]
        np.testing.assert_allclose(fn(logp, ref_logp, mask), expected, rtol=1e-6)


def test_shape_and_name_errors():
    with pytest.raises(ValueError, match="shape"):
        kl_k1(jnp.zeros(3), jnp.zeros(4))
    with pytest.raises(ValueError, match=r"\[L\]"):
        sequence_kl(jnp.zeros((2, 3)), jnp.zeros((2, 3)), jnp.ones((2, 3), bool))
    with pytest.raises(ValueError, match="boolean"):
        masked_kl(jnp.zeros(3), jnp.zeros(3), jnp.ones(3))
    with pytest.raises(KeyError, match="k1, k2, k3"):
        masked_kl(jnp.zeros(3), jnp.zeros(3), jnp.ones(3, bool), "k4")
    with pytest.raises(ValueError, match="reduction"):
        sequence_kl(jnp.zeros(3), jnp.zeros(3), jnp.ones(3, bool), reduction="max")


def test_penalty_config_validation():
    assert KLPenaltyConfig() == KLPenaltyConfig("k3", 0.0)
    with pytest.raises(ValueError, match="estimator"):
        KLPenaltyConfig(estimator="k5")
    with pytest.raises(ValueError, match="coef"):
        KLPenaltyConfig(coef=-0.1)
