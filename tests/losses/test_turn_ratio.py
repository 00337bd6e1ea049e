"""Turn-level importance ratio: per-turn geometric means, against a loop implementation."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.losses import (GSPOConfig, PolicyLossInputs, TurnRatioConfig, gspo_loss, turn_mean,
                         turn_ratio_loss, turn_ratio_sequence_loss)


def test_two_turns_by_hand():
    # Positions: turn 0 = {0, 1}, env tokens {2, 3}, turn 1 = {4, 5, 6}.
    log_ratio = jnp.array([0.2, 0.0, 9.0, 9.0, -0.3, -0.3, 0.0], jnp.float32)
    old_logp = jnp.full(7, -2.0, jnp.float32)
    turn_ids = jnp.array([0, 0, -1, -1, 1, 1, 1], jnp.int32)
    mask = turn_ids >= 0
    advantages = jnp.array([1.0, 1.0, 0.0, 0.0, -1.0, -1.0, -1.0], jnp.float32)
    config = TurnRatioConfig(num_turns=2, eps_low=0.1, eps_high=0.05)
    out = jax.jit(turn_ratio_sequence_loss, static_argnums=5)(
        old_logp + log_ratio, old_logp, advantages, mask, turn_ids, config)
    rho0, rho1 = np.exp(0.1), np.exp(-0.2)
    np.testing.assert_allclose(out.ratio, [rho0, rho0, 1, 1, rho1, rho1, rho1], rtol=1e-6)
    # Turn 0: A = 1, ρ0 = 1.105 > 1.05 → clipped high, ℓ = −1.05.
    # Turn 1: A = −1, ρ1 = 0.819 < 0.9 → clipped low, ℓ = 0.9.
    np.testing.assert_allclose(out.loss, [-1.05, -1.05, 0, 0, 0.9, 0.9, 0.9], rtol=1e-6)
    np.testing.assert_array_equal(out.clipped_high, [1, 1, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(out.clipped_low, [0, 0, 0, 0, 1, 1, 1])


def test_gradient_of_one_unclipped_turn():
    # ℓ_t = −ρ_k A_t for t in turn k; d(Σ_{t∈k} ℓ_t)/dlogp_j = −ρ_k Σ_{t∈k} A_t / |k| for j ∈ k.
    old_logp = jnp.full(5, -1.0, jnp.float32)
    logp = old_logp + jnp.array([0.02, -0.04, 0.0, 0.01, 0.05], jnp.float32)
    turn_ids = jnp.array([0, 0, -1, 1, 1], jnp.int32)
    mask = turn_ids >= 0
    advantages = jnp.array([1.0, 3.0, 0.0, -1.0, 0.5], jnp.float32)
    config = TurnRatioConfig(num_turns=2)

    def total(x):
        return jnp.sum(turn_ratio_sequence_loss(x, old_logp, advantages, mask, turn_ids, config).loss)

    rho0, rho1 = np.exp(-0.01), np.exp(0.03)
    expected = [-rho0 * 4 / 2, -rho0 * 4 / 2, 0.0, -rho1 * -0.5 / 2, -rho1 * -0.5 / 2]
    np.testing.assert_allclose(jax.jit(jax.grad(total))(logp), expected, rtol=1e-5)


def _loop_reference(inputs, config):
    """Per-token losses by explicit loops over sequences and turns (numpy, float64)."""
    logp, old, adv, mask, turns = (np.asarray(a, np.float64) for a in (
        inputs.logp, inputs.old_logp, inputs.advantages, inputs.mask, inputs.turn_ids))
    loss = np.zeros_like(logp)
    for b in range(logp.shape[0]):
        for k in range(config.num_turns):
            members = (turns[b] == k) & (mask[b] > 0)
            if not members.any():
                continue
            rho = np.exp(np.mean(logp[b, members] - old[b, members]))
            for t in np.flatnonzero(members):
                a = adv[b, t]
                ell = max(-rho * a, -np.clip(rho, 1 - config.eps_low, 1 + config.eps_high) * a)
                if config.dual_clip is not None and a < 0:
                    ell = min(ell, -config.dual_clip * a)
                loss[b, t] = ell
    return loss


def test_matches_a_loop_implementation(random_inputs, loss_config):
    config = loss_config("turn-ratio")
    for seed in range(3):
        inputs, _ = random_inputs(seed, batch=5, length=9, spread=0.4)
        out = jax.jit(turn_ratio_loss, static_argnums=1)(inputs, config)
        np.testing.assert_allclose(out.loss, _loop_reference(inputs, config), rtol=1e-5, atol=1e-6)


def test_one_turn_equals_gspo_with_the_same_clip(random_inputs):
    inputs, _ = random_inputs(7, spread=0.05)
    one_turn = inputs.replace(turn_ids=jnp.where(inputs.mask, 0, -1).astype(jnp.int32))
    config = TurnRatioConfig(num_turns=1, eps_low=0.02, eps_high=0.03)
    # GSPO broadcasts the *mean* advantage; with constant per-sequence advantages they agree.
    constant = one_turn.replace(advantages=jnp.broadcast_to(inputs.advantages[:, :1],
                                                            inputs.advantages.shape))
    out = jax.jit(turn_ratio_loss, static_argnums=1)(constant, config)
    reference = jax.jit(gspo_loss, static_argnums=1)(constant, GSPOConfig(0.02, 0.03))
    np.testing.assert_allclose(out.loss, reference.loss, rtol=1e-5, atol=1e-7)


def test_out_of_range_turn_ids_are_dropped():
    logp = jnp.array([-1.0, -1.0, -1.0], jnp.float32)
    turn_ids = jnp.array([0, 5, -1], jnp.int32)
    mask = jnp.array([True, True, True])
    out = jax.jit(turn_ratio_sequence_loss, static_argnums=5)(logp, logp, jnp.ones(3), mask,
                                                              turn_ids, TurnRatioConfig(2))
    np.testing.assert_array_equal(out.mask, [True, False, False])
    np.testing.assert_allclose(out.loss, [-1.0, 0.0, 0.0])


def test_turn_mean_helper():
    x = jnp.array([1.0, 3.0, 100.0, 4.0], jnp.float32)
    turn_ids = jnp.array([1, 1, 0, 0], jnp.int32)
    mask = jnp.array([True, True, False, True])
    mean, in_turn = jax.jit(turn_mean, static_argnums=3)(x, turn_ids, mask, 2)
    np.testing.assert_allclose(mean, [2.0, 2.0, 0.0, 4.0])
    np.testing.assert_array_equal(in_turn, [True, True, False, True])


def test_errors():
    inputs = PolicyLossInputs(jnp.zeros((2, 3)), jnp.zeros((2, 3)), jnp.zeros((2, 3)),
                              jnp.ones((2, 3), bool))
    with pytest.raises(ValueError, match="turn_ids"):
        turn_ratio_loss(inputs, TurnRatioConfig(2))
    with pytest.raises(ValueError, match="integer"):
        turn_ratio_loss(inputs.replace(turn_ids=jnp.zeros((2, 3))), TurnRatioConfig(2))
    with pytest.raises(ValueError, match="num_turns"):
        TurnRatioConfig(num_turns=0)
    with pytest.raises(ValueError, match="dual_clip"):
        TurnRatioConfig(num_turns=2, dual_clip=0.5)
