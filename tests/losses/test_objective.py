"""The objective: registries, config validation, the KL term and NaN-free metrics."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.losses import (AGGREGATIONS, KL_ESTIMATORS, POLICY_LOSSES, GSPOConfig, KLPenaltyConfig,
                         PolicyLossInputs, PolicyObjectiveConfig, PPOClipConfig, aggregate,
                         masked_kl, policy_objective)


def test_registries_list_every_component():
    # A subset: a newly registered loss joins without editing this test.
    assert {"gspo", "gspo-token", "ppo", "refuel", "reinforce", "turn-ratio"} <= \
        set(POLICY_LOSSES.names())
    assert KL_ESTIMATORS.names() == ("k1", "k2", "k3")
    assert AGGREGATIONS.names() == ("seq-mean-token-mean", "seq-mean-token-sum",
                                    "seq-mean-token-sum-norm", "token-mean")
    for name in POLICY_LOSSES:
        entry = POLICY_LOSSES.get(name)
        assert callable(entry.fn)
        entry.options()  # Every loss has a valid default config.


def test_config_validation_uses_registry_names():
    with pytest.raises(ValueError, match="gspo, gspo-token|'gspo', 'gspo-token'"):
        PolicyObjectiveConfig(loss="grpo")
    with pytest.raises(ValueError, match="token-mean"):
        PolicyObjectiveConfig(aggregation="mean")
    with pytest.raises(ValueError, match="takes a PPOOptions, got GSPOConfig"):
        PolicyObjectiveConfig(loss="ppo", loss_config=GSPOConfig())
    with pytest.raises(ValueError, match="max_length"):
        PolicyObjectiveConfig(max_length=0)
    config = PolicyObjectiveConfig(loss="gspo")
    assert config.loss_config == GSPOConfig()
    hash(config)  # Static under jit.


def test_kl_term_is_added_per_token_before_aggregation(random_inputs):
    inputs, ref_logp = random_inputs(11)
    beta = 0.3
    cases = [(aggregation, estimator) for aggregation in AGGREGATIONS.names()
             for estimator in ("k1", "k3")]

    @jax.jit
    def evaluate(inputs, ref_logp):
        # One compilation for every case: each config is a compile-time constant.
        results = []
        for aggregation, estimator in cases:
            base = PolicyObjectiveConfig(loss="ppo", aggregation=aggregation,
                                         kl=KLPenaltyConfig(estimator, 0.0))
            with_kl = PolicyObjectiveConfig(loss="ppo", aggregation=aggregation,
                                            kl=KLPenaltyConfig(estimator, beta))
            kl_t = masked_kl(inputs.logp, ref_logp, inputs.mask, estimator)
            results.append((policy_objective(inputs, base, ref_logp),
                            policy_objective(inputs, with_kl, ref_logp),
                            aggregate(kl_t, inputs.mask, aggregation),
                            jnp.sum(kl_t) / jnp.sum(inputs.mask)))
        return results

    for (aggregation, estimator), result in zip(cases, evaluate(inputs, ref_logp)):
        (loss0, metrics0), (loss1, metrics1), aggregated_kl, token_mean_kl = result
        # Aggregations are linear in the per-token loss.
        assert float(loss1) == pytest.approx(float(loss0) + beta * float(aggregated_kl),
                                             rel=1e-5), (aggregation, estimator)
        assert float(metrics1["policy_loss"]) == pytest.approx(float(loss0), rel=1e-6)
        assert float(metrics0["kl"]) == pytest.approx(float(token_mean_kl), rel=1e-5)
        assert float(aggregated_kl) != 0.0


def test_grpo_objective_by_hand():
    # One sequence, on-policy (r = 1), A = 1, β = 0.1, k3 with π_ref/π = 0.5 on both tokens:
    # loss = mean_t(−1 + 0.1·(0.5 + log 2 − 1)).
    logp = jnp.log(jnp.array([[0.4, 0.8]], jnp.float32))
    inputs = PolicyLossInputs(logp=logp, old_logp=logp, advantages=jnp.ones((1, 2)),
                              mask=jnp.ones((1, 2), bool))
    config = PolicyObjectiveConfig(loss="ppo", loss_config=PPOClipConfig(),
                                   aggregation="seq-mean-token-mean", kl=KLPenaltyConfig("k3", 0.1))
    loss, _ = jax.jit(policy_objective, static_argnums=1)(inputs, config, logp + jnp.log(0.5))
    assert float(loss) == pytest.approx(-1 + 0.1 * (0.5 + np.log(2) - 1), rel=1e-6)


def test_kl_coef_without_reference_is_an_error(random_inputs):
    inputs, _ = random_inputs(0)
    with pytest.raises(ValueError, match="ref_logp"):
        policy_objective(inputs, PolicyObjectiveConfig(kl=KLPenaltyConfig("k3", 0.1)))


@pytest.mark.parametrize("name", POLICY_LOSSES.names())
def test_all_false_mask_gives_finite_zero_metrics(random_inputs, loss_config, name):
    inputs, ref_logp = random_inputs(1)
    empty = inputs.replace(mask=jnp.zeros_like(inputs.mask))
    config = PolicyObjectiveConfig(loss=name, loss_config=loss_config(name),
                                   kl=KLPenaltyConfig("k3", 0.1))

    def loss_fn(logp):
        return policy_objective(empty.replace(logp=logp), config, ref_logp)

    (loss, metrics), grad = jax.jit(jax.value_and_grad(loss_fn, has_aux=True))(empty.logp)
    assert float(loss) == 0.0
    np.testing.assert_array_equal(grad, 0.0)
    for key, value in metrics.items():
        assert np.isfinite(float(value)), key
    assert float(metrics["ratio_min"]) == 1.0 and float(metrics["ratio_max"]) == 1.0
    assert float(metrics["clip_frac"]) == 0.0 and float(metrics["num_tokens"]) == 0.0


def test_objective_under_vmap_over_agents(random_inputs):
    pairs = [random_inputs(seed, batch=4, length=6) for seed in (8, 9)]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *[p[0] for p in pairs])
    stacked_ref = jnp.stack([p[1] for p in pairs])
    config = PolicyObjectiveConfig(loss="ppo", aggregation="seq-mean-token-mean",
                                   kl=KLPenaltyConfig("k3", 0.04))

    def loss_and_grad(inputs, ref_logp):
        def loss_fn(logp):
            return policy_objective(inputs.replace(logp=logp), config, ref_logp)
        return jax.value_and_grad(loss_fn, has_aux=True)(inputs.logp)

    (loss_v, metrics_v), grad_v = jax.jit(jax.vmap(loss_and_grad))(stacked, stacked_ref)
    single = jax.jit(loss_and_grad)
    for agent, (inputs, ref_logp) in enumerate(pairs):
        (loss, metrics), grad = single(inputs, ref_logp)
        np.testing.assert_allclose(loss_v[agent], loss, rtol=1e-5)
        np.testing.assert_allclose(grad_v[agent], grad, rtol=1e-5, atol=1e-7)
        for key in metrics:
            np.testing.assert_allclose(metrics_v[key][agent], metrics[key], rtol=1e-5, atol=1e-7)
