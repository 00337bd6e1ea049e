"""GSPO and GSPO-token: the sequence ratio, the objective and the stop-gradient variant."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.losses import (GSPOConfig, PolicyLossInputs, PolicyObjectiveConfig, gspo_loss,
                         gspo_sequence_loss, gspo_token_loss, policy_objective)

CONFIG = GSPOConfig(eps_low=0.1, eps_high=0.2)
# Jitted: op-by-op dispatch compiles every primitive and is far slower on CPU.
batch_loss = jax.jit(gspo_loss, static_argnums=1)
batch_token_loss = jax.jit(gspo_token_loss, static_argnums=1)
objective = jax.jit(policy_objective, static_argnums=1)


def _batch():
    # Two sequences; valid token log-ratios [0.3, -0.1] (s = e^0.1) and [0.6, 0.6, 0.9] (s = e^0.7).
    old_logp = jnp.full((2, 4), -1.0, jnp.float32)
    log_ratio = jnp.array([[0.3, -0.1, 5.0, 5.0], [0.6, 0.6, 0.9, 5.0]], jnp.float32)
    mask = jnp.array([[True, True, False, False], [True, True, True, False]])
    advantages = jnp.array([[1.0] * 4, [-2.0] * 4], jnp.float32)
    return PolicyLossInputs(logp=old_logp + log_ratio, old_logp=old_logp, advantages=advantages,
                            mask=mask)


def test_sequence_ratio_and_loss_by_hand():
    inputs = _batch()
    out = batch_loss(inputs, CONFIG)
    s0, s1 = np.exp(0.1), np.exp(0.7)
    # Sequence 0: A = 1, s0 = 1.105 inside [0.9, 1.2] → ℓ = −s0 on each valid token.
    # Sequence 1: A = −2, s1 = 2.01 > 1.2 → max(2·s1, 2·1.2) = 2·s1 (ratio not clipped for A < 0).
    np.testing.assert_allclose(out.loss[0], [-s0, -s0, 0, 0], rtol=1e-5)
    np.testing.assert_allclose(out.loss[1], [2 * s1] * 3 + [0], rtol=1e-5)
    np.testing.assert_allclose(out.ratio[0, :2], s0, rtol=1e-5)
    np.testing.assert_allclose(out.ratio[1, :3], s1, rtol=1e-5)
    assert not bool(jnp.any(out.clipped_high)) and not bool(jnp.any(out.clipped_low))


def test_clip_flags_mark_whole_sequences():
    inputs = _batch()
    flipped = inputs.replace(advantages=-inputs.advantages)  # sequence 1 now has A = +2, s1 > 1.2
    out = batch_loss(flipped, CONFIG)
    np.testing.assert_array_equal(out.clipped_high, [[0, 0, 0, 0], [1, 1, 1, 0]])
    np.testing.assert_allclose(out.loss[1, :3], -2 * 1.2, rtol=1e-6)


def test_seq_mean_token_mean_reproduces_the_gspo_objective():
    inputs = _batch()
    config = PolicyObjectiveConfig(loss="gspo", loss_config=CONFIG, aggregation="seq-mean-token-mean")
    loss, _ = objective(inputs, config)
    # −J_GSPO = −mean_i min(s_i A_i, clip(s_i) A_i), computed directly.
    s = np.exp([0.1, 0.7])
    a = np.array([1.0, -2.0])
    j_gspo = np.mean(np.minimum(s * a, np.clip(s, 0.9, 1.2) * a))
    assert float(loss) == pytest.approx(-j_gspo, rel=1e-6)


def test_gradient_reaches_every_token_through_the_mean():
    # d(−s·A)/dlogp_t = −A·s/|y| for each valid token of an unclipped sequence; ℓ is summed here.
    inputs = _batch()
    grad = jax.jit(jax.grad(
        lambda x: jnp.sum(gspo_loss(inputs.replace(logp=x), CONFIG).loss)))(inputs.logp)
    s0, s1 = np.exp(0.1), np.exp(0.7)
    # Sequence 0 carries ℓ on 2 tokens: Σ_t ℓ = −2·s0, gradient −2·s0/2 per token.
    np.testing.assert_allclose(grad[0], [-s0, -s0, 0, 0], rtol=1e-5)
    # Sequence 1 carries 2·s1 on 3 tokens: gradient 3·2·s1/3 per token.
    np.testing.assert_allclose(grad[1], [2 * s1] * 3 + [0], rtol=1e-5)


def test_gspo_token_matches_gspo_for_constant_advantages():
    inputs = _batch()
    for config in (CONFIG, GSPOConfig()):
        obj = PolicyObjectiveConfig(loss="gspo", loss_config=config, aggregation="seq-mean-token-mean")
        obj_token = PolicyObjectiveConfig(loss="gspo-token", loss_config=config,
                                          aggregation="seq-mean-token-mean")
        value, grad = jax.jit(jax.value_and_grad(
            lambda x: policy_objective(inputs.replace(logp=x), obj)[0]))(inputs.logp)
        value_t, grad_t = jax.jit(jax.value_and_grad(
            lambda x: policy_objective(inputs.replace(logp=x), obj_token)[0]))(inputs.logp)
        assert float(value_t) == pytest.approx(float(value), rel=1e-6)
        np.testing.assert_allclose(grad_t, grad, rtol=1e-5, atol=1e-7)


def test_gspo_token_uses_per_token_advantages():
    # ℓ_t = −s·A_t per token (s inside the clip range), gradient −s·A_t (value s, ∇ log π_t).
    old_logp = jnp.full((1, 3), -1.0, jnp.float32)
    logp = old_logp + jnp.array([[0.01, -0.01, 0.03]], jnp.float32)
    advantages = jnp.array([[1.0, -2.0, 0.5]], jnp.float32)
    inputs = PolicyLossInputs(logp=logp, old_logp=old_logp, advantages=advantages,
                              mask=jnp.ones((1, 3), bool))
    s = np.exp(0.01)
    out = batch_token_loss(inputs, CONFIG)
    np.testing.assert_allclose(out.loss[0], -s * np.array([1.0, -2.0, 0.5]), rtol=1e-5)
    grad = jax.jit(jax.grad(
        lambda x: jnp.sum(gspo_token_loss(inputs.replace(logp=x), CONFIG).loss)))(logp)
    np.testing.assert_allclose(grad[0], -s * np.array([1.0, -2.0, 0.5]), rtol=1e-5)
    # Sequence-level GSPO uses the mean advantage (−1/6) on every token instead.
    np.testing.assert_allclose(batch_loss(inputs, CONFIG).loss[0], s / 6, rtol=1e-5)


def test_empty_sequence_is_zero_and_finite():
    out = jax.jit(gspo_sequence_loss, static_argnums=4)(jnp.zeros(3), jnp.zeros(3), jnp.ones(3),
                                                        jnp.zeros(3, bool), CONFIG)
    np.testing.assert_array_equal(out.loss, 0.0)
    assert bool(jnp.all(jnp.isfinite(out.ratio)))


def test_config_defaults_and_validation():
    assert (GSPOConfig().eps_low, GSPOConfig().eps_high) == (3e-4, 4e-4)
    with pytest.raises(ValueError, match="eps_low"):
        GSPOConfig(eps_low=-1e-4)
