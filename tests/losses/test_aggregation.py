"""Loss aggregations: the worked example, hand-computed values, padding and masking."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.losses import (AGGREGATIONS, aggregate, seq_mean_token_mean, seq_mean_token_sum,
                         seq_mean_token_sum_norm, token_mean)

# docs/design.md section 4: lengths 2 and 4 with values [1, 1] and [2, 2, 2, 2]; the
# padding positions hold other values that must not count.
LOSS = jnp.array([[1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0]])
MASK = jnp.array([[True, True, False, False], [True, True, True, True]])


def test_registry_names():
    assert AGGREGATIONS.names() == ("seq-mean-token-mean", "seq-mean-token-sum",
                                    "seq-mean-token-sum-norm", "token-mean")
    assert AGGREGATIONS.get("token-mean") is token_mean


def test_worked_example():
    assert float(aggregate(LOSS, MASK, "token-mean")) == pytest.approx(1.6667, abs=1e-4)
    assert float(aggregate(LOSS, MASK, "seq-mean-token-mean")) == pytest.approx(1.5)


def test_token_sum_forms():
    # Sequence sums are 2 and 8.
    assert float(seq_mean_token_sum(LOSS, MASK)) == pytest.approx(5.0)
    assert float(seq_mean_token_sum_norm(LOSS, MASK)) == pytest.approx(5.0 / 4)
    assert float(seq_mean_token_sum_norm(LOSS, MASK, 10)) == pytest.approx(0.5)
    assert float(aggregate(LOSS, MASK, "seq-mean-token-sum-norm", max_length=10)) == \
        pytest.approx(0.5)


def test_against_a_loop_implementation():
    rng = np.random.default_rng(0)
    loss = rng.normal(size=(6, 9)).astype(np.float32)
    mask = rng.random((6, 9)) < 0.5
    mask[2] = False
    rows = [loss[b][mask[b]] for b in range(6) if mask[b].any()]
    expected = {
        "token-mean": np.concatenate(rows).mean(),
        "seq-mean-token-mean": np.mean([r.mean() for r in rows]),
        "seq-mean-token-sum": np.mean([r.sum() for r in rows]),
        "seq-mean-token-sum-norm": np.mean([r.sum() for r in rows]) / 9,
    }
    for name, value in expected.items():
        assert float(aggregate(jnp.asarray(loss), jnp.asarray(mask), name)) == \
            pytest.approx(value, rel=1e-5), name


@pytest.mark.parametrize("name", AGGREGATIONS.names())
def test_padding_rows_and_masked_values_change_nothing(name):
    base = aggregate(LOSS, MASK, name, max_length=4)
    padded_loss = jnp.concatenate([LOSS, jnp.full((3, 4), 7.0)])
    padded_mask = jnp.concatenate([MASK, jnp.zeros((3, 4), bool)])
    assert float(aggregate(padded_loss, padded_mask, name, max_length=4)) == float(base)
    for extreme in (1e30, -1e30, jnp.inf, -jnp.inf):
        dirty = jnp.where(MASK, LOSS, extreme)
        assert float(aggregate(dirty, MASK, name, max_length=4)) == float(base)
        grad = jax.grad(lambda x: aggregate(x, MASK, name, max_length=4))(dirty)
        np.testing.assert_array_equal(grad[~np.asarray(MASK)], 0.0)


@pytest.mark.parametrize("name", AGGREGATIONS.names())
def test_empty_mask_gives_zero_not_nan(name):
    value = aggregate(LOSS, jnp.zeros_like(MASK), name)
    assert float(value) == 0.0
    grad = jax.grad(lambda x: aggregate(x, jnp.zeros_like(MASK), name))(LOSS)
    np.testing.assert_array_equal(grad, 0.0)


def test_gradient_weights():
    # ∂/∂ℓ_bt: token-mean 1/6 everywhere; seq-mean-token-mean 1/(2·n_b); seq-mean-token-sum 1/2.
    valid = np.asarray(MASK, np.float32)
    np.testing.assert_allclose(jax.grad(token_mean)(LOSS, MASK), valid / 6)
    np.testing.assert_allclose(jax.grad(seq_mean_token_mean)(LOSS, MASK),
                               valid / (2 * valid.sum(-1, keepdims=True)))
    np.testing.assert_allclose(jax.grad(seq_mean_token_sum)(LOSS, MASK), valid / 2)


@pytest.mark.parametrize("name", AGGREGATIONS.names())
def test_jit_and_vmap(name):
    rng = np.random.default_rng(1)
    loss = jnp.asarray(rng.normal(size=(3, 5, 6)), jnp.float32)
    mask = jnp.asarray(rng.random((3, 5, 6)) < 0.6)
    fn = AGGREGATIONS.get(name)
    batched = jax.jit(jax.vmap(lambda l, m: fn(l, m, None)))(loss, mask)
    expected = [float(fn(loss[i], mask[i], None)) for i in range(3)]
    np.testing.assert_allclose(batched, expected, rtol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match=r"\[B, L\]"):
        token_mean(jnp.zeros(4), jnp.ones(4, bool))
    with pytest.raises(ValueError, match="shape"):
        token_mean(jnp.zeros((2, 4)), jnp.ones((2, 5), bool))
    with pytest.raises(ValueError, match="boolean"):
        token_mean(jnp.zeros((2, 4)), jnp.ones((2, 4)))
    with pytest.raises(ValueError, match="max_length"):
        seq_mean_token_sum_norm(LOSS, MASK, 0)
    with pytest.raises(KeyError, match="token-mean"):
        aggregate(LOSS, MASK, "sum")
