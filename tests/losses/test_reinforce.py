"""REINFORCE (MAGRPO): hand values and the gradient of a tiny softmax policy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.losses import (POLICY_LOSSES, PolicyLossInputs, PolicyObjectiveConfig, ReinforceConfig,
                         policy_objective, reinforce_loss, reinforce_sequence_loss)


def test_hand_computed_per_token_loss():
    logp = jnp.log(jnp.array([0.5, 0.25, 0.9], jnp.float32))
    advantage = jnp.array([2.0, 2.0, 2.0])
    mask = jnp.array([True, True, False])
    out = jax.jit(reinforce_sequence_loss)(logp, logp + 0.1, advantage, mask)
    np.testing.assert_allclose(out.loss, [2 * np.log(2), 2 * np.log(4), 0.0], rtol=1e-6)
    np.testing.assert_array_equal(out.mask, mask)
    # The ratio is a diagnostic only: π/π_old = e^{-0.1} on valid tokens, 1 elsewhere.
    np.testing.assert_allclose(out.ratio, [np.exp(-0.1), np.exp(-0.1), 1.0], rtol=1e-6)
    assert not bool(jnp.any(out.clipped_low | out.clipped_high | out.dual_clipped))


def test_magrpo_loss_is_seq_mean_token_sum():
    # Two completions of one group: ℓ_i = −A_i Σ_t log π(y_it); MAGRPO's loss is their mean.
    logp = jnp.log(jnp.array([[0.5, 0.5, 1.0], [0.2, 0.4, 0.1]], jnp.float32))
    advantages = jnp.array([[1.5] * 3, [-0.5] * 3], jnp.float32)
    mask = jnp.array([[True, True, False], [True, True, True]])
    inputs = PolicyLossInputs(logp=logp, old_logp=logp, advantages=advantages, mask=mask)
    expected = np.mean([-1.5 * np.log(0.25), 0.5 * np.log(0.2 * 0.4 * 0.1)])
    config = PolicyObjectiveConfig(loss="reinforce", aggregation="seq-mean-token-sum")
    loss, metrics = jax.jit(policy_objective, static_argnums=1)(inputs, config)
    assert float(loss) == pytest.approx(expected, rel=1e-6)
    assert float(metrics["ratio_mean"]) == pytest.approx(1.0)
    assert float(metrics["approx_kl"]) == pytest.approx(0.0, abs=1e-7)
    assert POLICY_LOSSES.get("reinforce").options is ReinforceConfig


def _tiny_policy_logp(weights, features, tokens):
    """A softmax policy log π(y_t) = log_softmax(x_t W)[y_t] over a 5-token vocabulary."""
    logits = features @ weights  # [B, L, V]
    return jnp.take_along_axis(jax.nn.log_softmax(logits), tokens[..., None], axis=-1)[..., 0]


def test_gradient_of_a_tiny_model_equals_minus_a_grad_log_pi():
    rng = np.random.default_rng(0)
    batch, length, dim, vocab = 3, 4, 3, 5
    weights = jnp.asarray(rng.normal(size=(dim, vocab)), jnp.float32)
    features = jnp.asarray(rng.normal(size=(batch, length, dim)), jnp.float32)
    tokens = jnp.asarray(rng.integers(0, vocab, (batch, length)))
    advantages = np.repeat(rng.normal(size=(batch, 1)), length, axis=1).astype(np.float32)
    mask = np.array([[1, 1, 1, 0], [1, 0, 1, 1], [0, 1, 1, 0]], bool)
    config = PolicyObjectiveConfig(loss="reinforce", aggregation="seq-mean-token-sum")

    def loss_fn(w):
        logp = _tiny_policy_logp(w, features, tokens)
        inputs = PolicyLossInputs(logp=logp, old_logp=jax.lax.stop_gradient(logp),
                                  advantages=jnp.asarray(advantages), mask=jnp.asarray(mask))
        return policy_objective(inputs, config)[0]

    grad = jax.jit(jax.grad(loss_fn))(weights)

    # Independent formula in float64: ∇_W log softmax(xW)[y] = x ⊗ (onehot(y) − softmax(xW)),
    # and the MAGRPO gradient is −(1/B) Σ_b A_b Σ_t m_bt ∇ log π(y_bt).
    w, x, y = (np.asarray(a, np.float64) for a in (weights, features, tokens))
    expected = np.zeros_like(w)
    for b in range(batch):
        for t in range(length):
            if not mask[b, t]:
                continue
            logits = x[b, t] @ w
            probs = np.exp(logits - logits.max())
            probs /= probs.sum()
            grad_log_pi = np.outer(x[b, t], np.eye(vocab)[int(y[b, t])] - probs)
            expected += -advantages[b, t] * grad_log_pi / batch
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-6)


def test_batch_function_is_the_vmapped_sequence_function(random_inputs):
    inputs, _ = random_inputs(3)
    batch = jax.jit(reinforce_loss)(inputs)
    sequence_loss = jax.jit(reinforce_sequence_loss)
    for b in range(inputs.logp.shape[0]):
        one = sequence_loss(inputs.logp[b], inputs.old_logp[b], inputs.advantages[b],
                                      inputs.mask[b])
        np.testing.assert_allclose(batch.loss[b], one.loss, rtol=1e-6)


def test_rank_and_dtype_errors():
    with pytest.raises(ValueError, match=r"\[L\]"):
        reinforce_sequence_loss(jnp.zeros((2, 3)), jnp.zeros((2, 3)), jnp.zeros((2, 3)),
                                jnp.ones((2, 3), bool))
    with pytest.raises(ValueError, match="shape"):
        reinforce_sequence_loss(jnp.zeros(3), jnp.zeros(3), jnp.zeros(4), jnp.ones(3, bool))
    with pytest.raises(ValueError, match="boolean"):
        reinforce_sequence_loss(jnp.zeros(3), jnp.zeros(3), jnp.zeros(3), jnp.ones(3))
    with pytest.raises(ValueError, match=r"\[B, L\]"):
        reinforce_loss(PolicyLossInputs(jnp.zeros(3), jnp.zeros(3), jnp.zeros(3), jnp.ones(3, bool)))
