"""Which divergence each KL estimator optimises in each place, checked exactly on a
small categorical (the table in mtrl.losses.kl and docs/methods.md).

π = softmax(θ) over 4 tokens, π_ref fixed. Expectations over y ~ π are exact sums.

  in the loss (β·k_t added to the per-token loss; y is a sample, not differentiated):
      g = Σ_y π(y) · ∇θ k(log π_θ(y), log π_ref(y))
  in the reward (R ← R − β·k, then REINFORCE's −A·log π; k is a number):
      g = Σ_y π(y) · k(y) · ∇θ log π_θ(y)

g is the direction the update descends (per unit β).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.losses import KL_ESTIMATORS, KL_PLACEMENTS, check_kl_placement

REF = jnp.log(jnp.array([0.4, 0.3, 0.2, 0.1], jnp.float32))
THETAS = {"near": jnp.log(jnp.array([0.42, 0.28, 0.2, 0.1], jnp.float32)),
          "far": jnp.array([2.0, 0.0, -1.0, -2.0], jnp.float32),
          "random": jnp.array([0.3, -0.7, 0.9, 0.1], jnp.float32)}


def log_pi(theta):
    return jax.nn.log_softmax(theta)


def kl_forward(theta):  # KL(π ‖ π_ref)
    return jnp.sum(jnp.exp(log_pi(theta)) * (log_pi(theta) - REF))


def kl_reverse(theta):  # KL(π_ref ‖ π)
    return jnp.sum(jnp.exp(REF) * (REF - log_pi(theta)))


def expected_k(estimator):
    def value(theta):  # E_{y~π}[k(y)] with π differentiated everywhere
        return jnp.sum(jnp.exp(log_pi(theta)) * KL_ESTIMATORS.get(estimator)(log_pi(theta), REF))
    return value


# The gradient each table entry names, as functions of θ.
NAMED = {
    "0": lambda t: jnp.zeros_like(t),
    "grad KL(pi||ref)": jax.grad(kl_forward),
    "grad KL(ref||pi)": jax.grad(kl_reverse),
    "grad KL(pi||ref) - grad KL(ref||pi)": lambda t: jax.grad(kl_forward)(t) - jax.grad(kl_reverse)(t),
    "grad E_pi[k2] - grad KL(pi||ref)": lambda t: jax.grad(expected_k("k2"))(t) - jax.grad(kl_forward)(t),
}


def place_gradient(estimator, place, theta):
    k = KL_ESTIMATORS.get(estimator)
    pi = jax.lax.stop_gradient(jnp.exp(log_pi(theta)))
    if place == "loss":
        return jax.grad(lambda t: jnp.sum(pi * k(log_pi(t), REF)))(theta)
    penalty = jax.lax.stop_gradient(k(log_pi(theta), REF))
    return jax.grad(lambda t: jnp.sum(pi * penalty * log_pi(t)))(theta)


@pytest.mark.parametrize("theta", list(THETAS), ids=list(THETAS))
@pytest.mark.parametrize("estimator, place", sorted(KL_PLACEMENTS))
def test_each_place_follows_the_gradient_its_table_entry_names(estimator, place, theta):
    theta = THETAS[theta]
    gradient, _ = KL_PLACEMENTS[(estimator, place)]
    np.testing.assert_allclose(place_gradient(estimator, place, theta),
                               NAMED[gradient](theta), atol=2e-6)


def test_k1_in_the_loss_has_zero_expected_gradient_away_from_the_reference():
    # E_π[∇ log π] = Σ ∇π = 0, however far π is from π_ref.
    for theta in THETAS.values():
        assert float(jnp.abs(place_gradient("k1", "loss", theta)).max()) < 1e-6
    assert float(jnp.abs(jax.grad(kl_forward)(THETAS["far"])).max()) > 0.1


def test_k3_in_the_reward_pushes_away_from_the_reference_far_from_it():
    # Far from π_ref a descent step along k3-in-the-reward's gradient raises KL(π ‖ π_ref):
    # it is no regulariser. k1 in the reward and k2 / k3 in the loss lower it.
    theta = THETAS["far"]
    for estimator, place, lowers in (("k3", "reward", False), ("k2", "reward", False),
                                     ("k1", "reward", True), ("k3", "loss", True),
                                     ("k2", "loss", True)):
        step = theta - 0.05 * place_gradient(estimator, place, theta)
        assert (float(kl_forward(step)) < float(kl_forward(theta))) == lowers, (estimator, place)


def test_refused_combinations_are_the_ones_that_regularise_nothing():
    refused = {key for key, (_, regularises) in KL_PLACEMENTS.items() if not regularises}
    assert refused == {("k1", "loss"), ("k2", "reward"), ("k3", "reward")}
    for estimator, place in refused:
        with pytest.raises(ValueError, match=f"'{estimator}' in the {place}") as error:
            check_kl_placement(estimator, place, coef=0.1)
        assert "\n" not in str(error.value)
        check_kl_placement(estimator, place, coef=0.0)  # reported only: no update follows it
    for estimator, place in set(KL_PLACEMENTS) - refused:
        check_kl_placement(estimator, place, coef=0.1)
