"""Invariants of every registered loss under every aggregation.

* Masked (environment, padding) positions never change a loss or its gradient,
  whatever they hold: huge values or infinities in the log-probs, old
  log-probs, reference log-probs and advantages, random turn ids.
* A second call with the same shapes does not retrace the jitted step.
* The batch losses run unchanged under jax.vmap over an extra leading axis.

One jitted function per loss evaluates all aggregations at once, so each loss
compiles once (plus once for its vmapped form).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.losses import (AGGREGATIONS, POLICY_LOSSES, KLPenaltyConfig, PolicyObjectiveConfig,
                         policy_objective)


def _configs(name, loss_config):
    return tuple(PolicyObjectiveConfig(loss=name, loss_config=loss_config(name), aggregation=agg,
                                       kl=KLPenaltyConfig("k3", 0.05))
                 for agg in AGGREGATIONS.names())


def _evaluate(inputs, ref_logp, configs, traces):
    """(loss, ∂loss/∂logp, metrics) for each config; appends to `traces` when traced."""
    traces.append(1)
    results = []
    for config in configs:
        def loss_fn(logp, config=config):
            return policy_objective(inputs.replace(logp=logp), config, ref_logp)
        (loss, metrics), grad = jax.value_and_grad(loss_fn, has_aux=True)(inputs.logp)
        results.append((loss, grad, metrics))
    return results


def _dirty(inputs, ref_logp, seed):
    """Overwrites every masked position with extremes that must not matter."""
    rng = np.random.default_rng(seed)
    masked = ~np.asarray(inputs.mask)
    shape = masked.shape
    choices = np.array([1e30, -1e30, np.inf, -np.inf, 3e4, -3e4], np.float32)

    def junk(x):
        return jnp.where(masked, jnp.asarray(rng.choice(choices, shape)), x)

    turn_ids = jnp.where(masked, jnp.asarray(rng.integers(-5, 5, shape), jnp.int32),
                         inputs.turn_ids)
    dirty = inputs.replace(logp=junk(inputs.logp), old_logp=junk(inputs.old_logp),
                           advantages=junk(inputs.advantages), turn_ids=turn_ids)
    return dirty, junk(ref_logp)


@pytest.mark.parametrize("name", POLICY_LOSSES.names())
def test_masked_positions_change_nothing_and_no_retrace(random_inputs, loss_config, name):
    inputs, ref_logp = random_inputs(3, batch=4, length=8)
    traces = []
    step = jax.jit(functools.partial(_evaluate, configs=_configs(name, loss_config),
                                     traces=traces))
    clean = step(inputs, ref_logp)
    masked = ~np.asarray(inputs.mask)
    for seed in range(2):
        dirty = step(*_dirty(inputs, ref_logp, seed))
        for agg, (loss, grad, metrics), (loss_d, grad_d, metrics_d) in zip(
                AGGREGATIONS.names(), clean, dirty):
            assert np.isfinite(float(loss)), agg
            np.testing.assert_array_equal(loss_d, loss, err_msg=agg)
            np.testing.assert_array_equal(grad_d, grad, err_msg=agg)
            np.testing.assert_array_equal(np.asarray(grad)[masked], 0.0, err_msg=agg)
            for key in metrics:
                np.testing.assert_array_equal(metrics_d[key], metrics[key], err_msg=key)
    # A loss that does not depend on logp at all would pass the checks above trivially.
    assert any(float(jnp.abs(grad).max()) > 0 for _, grad, _ in clean)
    step(*random_inputs(4, batch=4, length=8))
    assert len(traces) == 1, "new values with the same shapes must not retrace"


def test_trace_counter_sees_new_shapes(random_inputs):
    # The no-retrace assertion above is meaningful only if a new shape does retrace.
    traces = []
    config = PolicyObjectiveConfig(loss="reinforce", aggregation="token-mean")

    @jax.jit
    def step(inputs):
        traces.append(1)
        return policy_objective(inputs, config)[0]

    for seed, batch in ((0, 4), (1, 4), (2, 6), (3, 6)):
        step(random_inputs(seed, batch=batch, length=5)[0])
    assert len(traces) == 2


@pytest.mark.parametrize("name", POLICY_LOSSES.names())
def test_batch_loss_under_vmap_over_a_leading_axis(random_inputs, loss_config, name):
    # e.g. N agents with separate parameters: [N, B, L] inputs, checked slice by slice.
    # (The aggregations and the full objective are vmapped in their own test files.)
    config = loss_config(name) or POLICY_LOSSES.get(name).options()
    fn = functools.partial(POLICY_LOSSES.get(name).fn, config=config)
    pairs = [random_inputs(seed, batch=4, length=8)[0] for seed in (5, 6)]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *pairs)
    together = jax.jit(jax.vmap(fn))(stacked)
    for agent, inputs in enumerate(pairs):
        alone = jax.jit(fn)(inputs)
        for field in ("loss", "mask", "ratio", "clipped_low", "clipped_high", "dual_clipped",
                      "approx_kl"):
            np.testing.assert_allclose(getattr(together, field)[agent], getattr(alone, field),
                                       rtol=1e-5, atol=1e-7, err_msg=field)
