"""REFUEL: the pairwise regression loss by hand, its gradient and its batch layout."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.losses import (PolicyLossInputs, PolicyObjectiveConfig, RefuelConfig, policy_objective,
                         refuel_loss, refuel_pair_loss, refuel_regression_loss)


# Jitted: op-by-op dispatch compiles every primitive and is far slower on CPU.
regression_loss = jax.jit(refuel_regression_loss, static_argnums=4)


def _pair():
    # Response y: log-ratios [0.2, 0.1] (sum 0.3); y': [−0.1, 0.0, 0.05] (sum −0.05).
    old_logp = jnp.full((2, 4), -1.5, jnp.float32)
    log_ratio = jnp.array([[0.2, 0.1, 7.0, 7.0], [-0.1, 0.0, 0.05, 7.0]], jnp.float32)
    mask = jnp.array([[True, True, False, False], [True, True, True, False]])
    return old_logp + log_ratio, old_logp, mask


def test_pair_loss_by_hand():
    logp, old_logp, mask = _pair()
    returns = jnp.array([1.0, 0.25], jnp.float32)
    config = RefuelConfig(eta=0.5)
    # ((0.3 − (−0.05))/0.5 − (1 − 0.25))² = (0.7 − 0.75)² = 0.0025.
    value = regression_loss(logp, old_logp, returns, mask, config)
    assert float(value) == pytest.approx(0.0025, rel=1e-4)
    out = jax.jit(refuel_pair_loss, static_argnums=4)(logp, old_logp, returns, mask, config)
    np.testing.assert_allclose(out.loss.sum(-1), [0.0025, 0.0025], rtol=1e-4)
    np.testing.assert_allclose(out.loss[1, :3], 0.0025 / 3, rtol=1e-4)
    np.testing.assert_array_equal(out.loss[:, 3], 0.0)


def test_gradient_by_hand():
    # dℓ/dlogp_t = ±2·(Δ/η − ΔQ)/η on the tokens of y (+) and y' (−).
    logp, old_logp, mask = _pair()
    returns = jnp.array([0.0, 1.0], jnp.float32)
    config = RefuelConfig(eta=2.0)
    residual = (0.35 / 2.0) - (-1.0)
    grad = jax.jit(jax.grad(
        lambda x: refuel_regression_loss(x, old_logp, returns, mask, config)))(logp)
    expected = np.where(np.asarray(mask), [[1.0], [-1.0]], 0.0) * 2 * residual / 2.0
    np.testing.assert_allclose(grad, expected, rtol=1e-5)


def test_batch_layout_and_exact_aggregation():
    logp, old_logp, mask = _pair()
    # Two pairs: rows (0, 1) and (2, 3); returns are broadcast over each row's valid tokens.
    logp = jnp.concatenate([logp, logp[::-1]])
    old_logp = jnp.concatenate([old_logp, old_logp])
    mask = jnp.concatenate([mask, mask[::-1]])
    returns = jnp.array([1.0, 0.25, 0.5, 0.0], jnp.float32)
    advantages = jnp.where(mask, returns[:, None], 123.0)  # off-mask values are never read
    inputs = PolicyLossInputs(logp=logp, old_logp=old_logp, advantages=advantages, mask=mask)
    config = RefuelConfig(eta=0.5)
    pair_losses = [float(regression_loss(logp[i:i + 2], old_logp[i:i + 2], returns[i:i + 2],
                                         mask[i:i + 2], config)) for i in (0, 2)]
    # Second pair: log-ratio sums swap sign: ((−0.35)/0.5 − 0.5)² = 1.44.
    assert pair_losses[1] == pytest.approx(1.44, rel=1e-4)
    out = jax.jit(refuel_loss, static_argnums=1)(inputs, config)
    np.testing.assert_allclose(out.loss.sum(-1), np.repeat(pair_losses, 2), rtol=1e-5)
    objective = PolicyObjectiveConfig(loss="refuel", loss_config=config,
                                      aggregation="seq-mean-token-sum")
    loss, metrics = jax.jit(policy_objective, static_argnums=1)(inputs, objective)
    assert float(loss) == pytest.approx(np.mean(pair_losses), rel=1e-5)
    assert float(metrics["clip_frac"]) == 0.0


def test_a_shared_baseline_cancels():
    logp, old_logp, mask = _pair()
    config = RefuelConfig(eta=0.7)
    a = regression_loss(logp, old_logp, jnp.array([1.0, 0.2]), mask, config)
    b = regression_loss(logp, old_logp, jnp.array([1.0, 0.2]) - 0.6, mask, config)
    assert float(a) == pytest.approx(float(b), rel=1e-6)


def test_errors():
    inputs = PolicyLossInputs(jnp.zeros((3, 4)), jnp.zeros((3, 4)), jnp.zeros((3, 4)),
                              jnp.ones((3, 4), bool))
    with pytest.raises(ValueError, match="even"):
        refuel_loss(inputs, RefuelConfig())
    with pytest.raises(ValueError, match="2 rows"):
        refuel_regression_loss(jnp.zeros((3, 4)), jnp.zeros((3, 4)), jnp.zeros(2),
                               jnp.ones((3, 4), bool))
    with pytest.raises(ValueError, match="eta"):
        RefuelConfig(eta=0.0)


def test_a_pair_with_one_row_out_of_the_loss_leaves_whole():
    # The two-row example: returns (1, 0), mean baseline -> advantages (0.5, -0.5).
    # The pair regresses onto A_y - A_y' = 1.0. When y' is out of the loss (context cut,
    # void-turn filter) its mean advantage reads 0 and the target would become 0.5 - 0:
    # instead the whole pair leaves the loss, its gradient and the aggregation.
    old_logp = jnp.full((4, 3), -1.0, jnp.float32)
    mask = jnp.array([[True, True, False], [True, True, True],
                      [True, True, False], [False, False, False]])
    advantages = jnp.where(mask, jnp.array([0.5, -0.5, 0.5, -0.5])[:, None], 0.0)
    objective = PolicyObjectiveConfig(loss="refuel", aggregation="seq-mean-token-sum")

    def loss_of(logp):
        inputs = PolicyLossInputs(logp=logp, old_logp=old_logp, advantages=advantages,
                                  mask=mask)
        return policy_objective(inputs, objective)[0]

    out = jax.jit(refuel_loss, static_argnums=1)(
        PolicyLossInputs(logp=old_logp, old_logp=old_logp, advantages=advantages, mask=mask),
        RefuelConfig())
    # Intact pair at ratio 1: (0 - 1.0)^2 = 1.0 (target 1.0, not 0.5); broken pair: nothing.
    np.testing.assert_allclose(out.loss.sum(-1), [1.0, 1.0, 0.0, 0.0], rtol=1e-6)
    np.testing.assert_array_equal(out.mask[2:], False)
    loss, grad = jax.jit(jax.value_and_grad(loss_of))(old_logp)
    assert float(loss) == pytest.approx(1.0, rel=1e-6)  # mean over the one intact pair
    np.testing.assert_array_equal(grad[2:], 0.0)
    # Intact pair: d/dlogp_t of (Δ - 1)² at Δ = 0 is -2 on y's tokens, +2 on y''s.
    np.testing.assert_allclose(grad[0], [-2.0, -2.0, 0.0], rtol=1e-6)
    np.testing.assert_allclose(grad[1], [2.0, 2.0, 2.0], rtol=1e-6)
