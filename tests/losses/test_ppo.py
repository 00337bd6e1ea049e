"""PPO clipped surrogate: every branch by hand, gradients, metrics and config checks."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.losses import (PolicyLossInputs, PolicyObjectiveConfig, PPOClipConfig, clipped_surrogate,
                         policy_objective, ppo_loss, ppo_sequence_loss)

# Ratios and advantages that hit each branch with ε_low = 0.2, ε_high = 0.28, c = 3:
#   t0: A>0, r=1.1  inside          ℓ = −1.1·2        = −2.2
#   t1: A>0, r=1.5  clipped high    ℓ = −1.28·2       = −2.56
#   t2: A<0, r=0.5  clipped low     ℓ = 0.8·1         = 0.8
#   t3: A<0, r=2.0  inside (max)    ℓ = 2.0·1         = 2.0
#   t4: A<0, r=5.0  dual clipped    ℓ = min(5, 3)·1   = 3.0
#   t5: A>0, r=0.5  unclipped side  ℓ = −0.5·2        = −1.0
#   t6: masked                      ℓ = 0
RATIO = np.array([1.1, 1.5, 0.5, 2.0, 5.0, 0.5, 1.0])
ADV = np.array([2.0, 2.0, -1.0, -1.0, -1.0, 2.0, 9.0])
MASK = np.array([True, True, True, True, True, True, False])
EXPECTED = np.array([-2.2, -2.56, 0.8, 2.0, 3.0, -1.0, 0.0])
CONFIG = PPOClipConfig(eps_low=0.2, eps_high=0.28, dual_clip=3.0)
# Jitted once per config: op-by-op dispatch compiles every primitive and is far slower on CPU.
sequence_loss = jax.jit(ppo_sequence_loss, static_argnames="config")


def _sequence(ratio=RATIO):
    old_logp = jnp.full(ratio.shape, -1.0, jnp.float32)
    return old_logp + jnp.log(jnp.asarray(ratio, jnp.float32)), old_logp


def test_every_branch_by_hand():
    logp, old_logp = _sequence()
    out = sequence_loss(logp, old_logp, jnp.asarray(ADV, jnp.float32), jnp.asarray(MASK),
                        config=CONFIG)
    np.testing.assert_allclose(out.loss, EXPECTED, rtol=1e-5)
    np.testing.assert_array_equal(out.clipped_high, [0, 1, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(out.clipped_low, [0, 0, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(out.dual_clipped, [0, 0, 0, 0, 1, 0, 0])
    np.testing.assert_allclose(out.ratio, RATIO, rtol=1e-5)
    np.testing.assert_allclose(out.approx_kl[:6], (RATIO - 1 - np.log(RATIO))[:6], rtol=1e-4,
                               atol=1e-7)


def test_without_dual_clip_the_large_ratio_is_unbounded():
    logp, old_logp = _sequence()
    config = PPOClipConfig(eps_low=0.2, eps_high=0.28)
    out = sequence_loss(logp, old_logp, jnp.asarray(ADV, jnp.float32), jnp.asarray(MASK),
                        config=config)
    assert float(out.loss[4]) == pytest.approx(5.0, rel=1e-5)
    assert not bool(jnp.any(out.dual_clipped))


def test_gradient_is_minus_a_r_where_unclipped_and_zero_where_clipped():
    logp, old_logp = _sequence()
    adv, mask = jnp.asarray(ADV, jnp.float32), jnp.asarray(MASK)
    grad = jax.jit(jax.grad(
        lambda x: jnp.sum(ppo_sequence_loss(x, old_logp, adv, mask, CONFIG).loss)))(logp)
    active = np.array([1, 0, 0, 1, 0, 1, 0], bool)  # t1, t2 clipped, t4 dual clipped, t6 masked
    np.testing.assert_allclose(grad, np.where(active, -ADV * RATIO, 0.0), rtol=1e-5, atol=1e-7)


def test_clipped_surrogate_on_ratios_directly():
    surrogate = jax.jit(functools.partial(clipped_surrogate, eps_low=0.2, eps_high=0.28,
                                          dual_clip=3.0))
    loss, low, high, dual = surrogate(
        jnp.asarray(RATIO, jnp.float32), jnp.asarray(np.where(MASK, ADV, 0.0), jnp.float32),
        jnp.asarray(MASK))
    np.testing.assert_allclose(loss, EXPECTED, rtol=1e-5)
    assert int(low.sum()) == 1 and int(high.sum()) == 1 and int(dual.sum()) == 1


def test_metrics_through_the_objective():
    logp, old_logp = _sequence()
    inputs = PolicyLossInputs(logp=logp[None], old_logp=old_logp[None],
                              advantages=jnp.asarray(ADV, jnp.float32)[None],
                              mask=jnp.asarray(MASK)[None])
    config = PolicyObjectiveConfig(loss="ppo", loss_config=CONFIG, aggregation="token-mean")
    loss, metrics = jax.jit(policy_objective, static_argnums=1)(inputs, config)
    assert float(loss) == pytest.approx(EXPECTED[:6].mean(), rel=1e-5)
    assert float(metrics["clip_frac_low"]) == pytest.approx(1 / 6)
    assert float(metrics["clip_frac_high"]) == pytest.approx(1 / 6)
    assert float(metrics["clip_frac"]) == pytest.approx(2 / 6)
    assert float(metrics["dual_clip_frac"]) == pytest.approx(1 / 6)
    assert float(metrics["ratio_min"]) == pytest.approx(0.5, rel=1e-5)
    assert float(metrics["ratio_max"]) == pytest.approx(5.0, rel=1e-5)
    assert float(metrics["ratio_mean"]) == pytest.approx(RATIO[:6].mean(), rel=1e-5)
    assert float(metrics["approx_kl"]) == pytest.approx(np.mean(RATIO[:6] - 1 - np.log(RATIO[:6])),
                                                        rel=1e-4)
    assert float(metrics["num_tokens"]) == 6.0


def test_huge_log_ratio_stays_finite():
    # log r = 500 on a valid token would overflow exp; the ±20 clip keeps loss and gradient finite.
    logp = jnp.array([0.0, -1.0], jnp.float32)
    old_logp = jnp.array([-500.0, -1.0], jnp.float32)
    adv, mask = jnp.array([-1.0, 1.0]), jnp.array([True, True])
    out, grad = jax.jit(jax.value_and_grad(
        lambda x: jnp.sum(ppo_sequence_loss(x, old_logp, adv, mask).loss)))(logp)
    assert float(out) == pytest.approx(np.exp(20.0) - 1.0, rel=1e-5)
    assert bool(jnp.all(jnp.isfinite(grad)))


def test_batch_function_matches_sequence_function(random_inputs):
    inputs, _ = random_inputs(5)
    batch = jax.jit(ppo_loss, static_argnums=1)(inputs, CONFIG)
    for b in range(inputs.logp.shape[0]):
        one = sequence_loss(inputs.logp[b], inputs.old_logp[b], inputs.advantages[b],
                            inputs.mask[b], config=CONFIG)
        np.testing.assert_allclose(batch.loss[b], one.loss, rtol=1e-6)


def test_config_validation():
    assert PPOClipConfig() == PPOClipConfig(0.2, 0.2, None)
    with pytest.raises(ValueError, match="eps_low"):
        PPOClipConfig(eps_low=1.0)
    with pytest.raises(ValueError, match="eps_high"):
        PPOClipConfig(eps_high=-0.1)
    with pytest.raises(ValueError, match="dual_clip"):
        PPOClipConfig(dual_clip=1.0)
