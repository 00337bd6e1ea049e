import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.credit import (GROUP_ADVANTAGES, group_advantages, grpo_advantages,
                         mean_baseline_advantages)

ONE_HOT = np.array([1.0, 0.0, 0.0, 0.0], np.float32)
NAMES = GROUP_ADVANTAGES.names()


@functools.partial(jax.jit, static_argnames=("opts",))
def all_estimators(rewards, mask, opts=()):
    """Every registered estimator on one group, in a single compile."""
    extra = {name: dict(o) for name, o in opts}
    return {name: GROUP_ADVANTAGES.get(name)(rewards, mask, **extra.get(name, {}))
            for name in NAMES}


def frozen(**per_name):
    return tuple((name, tuple(sorted(o.items()))) for name, o in per_name.items())


def test_registry_names():
    assert NAMES == ("dr_grpo", "grpo", "max", "mean", "raw", "rloo")
    with pytest.raises(KeyError, match="group advantage must be one of dr_grpo, grpo, max, mean, raw, rloo"):
        group_advantages(ONE_HOT, estimator="ppo")


@jax.jit
def grpo_variants(rewards):
    return (grpo_advantages(rewards, ddof=1, epsilon=1e-6),
            grpo_advantages(rewards, ddof=0, epsilon=1e-6),
            grpo_advantages(rewards))


def test_grpo_references():
    unbiased, population, default = grpo_variants(ONE_HOT)
    np.testing.assert_allclose(unbiased, [1.499997, -0.499999, -0.499999, -0.499999], atol=1e-6)
    np.testing.assert_allclose(population, [1.73205, -0.57735, -0.57735, -0.57735], atol=1e-5)
    # Default: unbiased std = sqrt(0.75 / 3) = 0.5 and ε added: 0.75 / (0.5 + 1e-6) < 1.5.
    assert float(default[0]) == pytest.approx(0.75 / (0.5 + 1e-6), rel=1e-6)
    assert float(default[0]) < 1.5


def test_dr_grpo_rloo_and_baseline_references():
    out = all_estimators(ONE_HOT, np.ones(4, bool))
    np.testing.assert_allclose(out["dr_grpo"], [0.75, -0.25, -0.25, -0.25])
    np.testing.assert_allclose(out["rloo"], [1.0, -1 / 3, -1 / 3, -1 / 3], rtol=1e-6)
    # docs/design.md worked check: R = [3, 1, 2, 2] with the mean baseline gives [1, −1, 0, 0].
    returns = np.array([3.0, 1.0, 2.0, 2.0], np.float32)
    out = all_estimators(returns, np.ones(4, bool))
    np.testing.assert_allclose(out["mean"], [1, -1, 0, 0])
    np.testing.assert_allclose(out["max"], [0, -2, -1, -1])
    np.testing.assert_allclose(out["raw"], [3, 1, 2, 2])
    np.testing.assert_allclose(out["rloo"], [4 / 3, -4 / 3, 0, 0], rtol=1e-6, atol=1e-6)


def test_std_normalization_uses_population_std_and_a_floor():
    returns = np.array([3.0, 1.0, 2.0, 2.0], np.float32)
    opts = frozen(mean={"normalize_std": True}, rloo={"normalize_std": True},
                  raw={"normalize_std": True, "std_floor": 0.5})
    out = all_estimators(returns, np.ones(4, bool), opts=opts)
    # Population std of [3, 1, 2, 2] is sqrt(0.5) > 0.5, so the floor is inactive.
    np.testing.assert_allclose(out["mean"], np.array([1, -1, 0, 0]) / np.sqrt(0.5), rtol=1e-6)
    np.testing.assert_allclose(out["rloo"], np.array([4, -4, 0, 0]) / 3 / np.sqrt(0.5),
                               rtol=1e-5, atol=1e-6)
    # A constant group: raw divides by the floor (not std + ε).
    out = all_estimators(np.full(4, 2.0, np.float32), np.ones(4, bool), opts=opts)
    np.testing.assert_allclose(out["raw"], 4.0)


def test_rloo_equals_scaled_mean_advantage():
    rewards = np.random.default_rng(0).normal(size=7).astype(np.float32)
    out = all_estimators(rewards, np.ones(7, bool))
    np.testing.assert_allclose(out["rloo"], 7 / 6 * out["mean"], rtol=1e-5, atol=1e-6)


def test_grpo_against_numpy_reference():
    rewards = np.random.default_rng(1).normal(size=8).astype(np.float32)
    unbiased, population, _ = grpo_variants(rewards)
    for ddof, got in ((1, unbiased), (0, population)):
        want = (rewards - rewards.mean()) / (rewards.std(ddof=ddof) + 1e-6)
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_constant_groups_give_exactly_zero():
    # A rounding residue in the mean would be amplified by the 1e-6 std floor / ε.
    opts = frozen(**{n: {"normalize_std": True} for n in ("mean", "rloo", "max")})
    per_value = jax.vmap(lambda r, m: all_estimators(r, m, opts=opts))
    values = np.array([0.1, 2.0, -0.7, 1 / 3], np.float32)
    rewards = np.repeat(values[:, None], 7, axis=1)
    mask = np.tile(np.array([True] * 6 + [False]), (4, 1))
    out = per_value(rewards, mask)
    for name in ("grpo", "dr_grpo", "mean", "rloo", "max"):
        np.testing.assert_array_equal(out[name], 0.0, err_msg=name)


def test_absent_members_do_not_affect_others_and_get_zero():
    mask = np.array([True, False, True, True, False, True])
    padded = np.array([2.0, np.nan, 0.5, -1.0, 1e9, 3.0], np.float32)
    compact = np.array([2.0, 0.5, -1.0, 3.0], np.float32)
    masked, reference = all_estimators(padded, mask), all_estimators(compact, np.ones(4, bool))
    for name in NAMES:
        out = np.asarray(masked[name])
        assert not np.any(np.isnan(out)), name
        np.testing.assert_array_equal(out[~mask], 0.0, err_msg=name)
        np.testing.assert_allclose(out[mask], reference[name], rtol=1e-6, err_msg=name)


def test_degenerate_groups_are_zero_not_nan():
    lone = all_estimators(np.array([5.0, 1.0], np.float32), np.array([True, False]))
    empty = all_estimators(np.array([5.0, 1.0], np.float32), np.array([False, False]))
    for name in NAMES:
        np.testing.assert_array_equal(lone[name], [5.0 if name == "raw" else 0.0, 0.0],
                                      err_msg=name)
        np.testing.assert_array_equal(empty[name], 0.0, err_msg=name)


def test_vmap_matches_per_group_calls():
    rng = np.random.default_rng(2)
    rewards = rng.normal(size=(3, 6)).astype(np.float32)
    mask = rng.random((3, 6)) < 0.7
    batched = jax.vmap(all_estimators)(rewards, mask)
    for row in range(3):
        single = all_estimators(rewards[row], mask[row])
        for name in NAMES:
            np.testing.assert_allclose(batched[name][row], single[name], rtol=1e-5, atol=1e-6)


def test_second_call_with_same_shapes_does_not_retrace():
    traces = []

    @functools.partial(jax.jit, static_argnames="name")
    def advantages(rewards, mask, name):
        traces.append(name)
        return group_advantages(rewards, mask, estimator=name)

    advantages(ONE_HOT, np.ones(4, bool), name="grpo")
    advantages(np.array([0.3, 0.1, 0.9, 0.2], np.float32), np.array([1, 0, 1, 1], bool),
               name="grpo")
    assert traces == ["grpo"]


def test_integer_rewards_are_promoted():
    out = all_estimators(np.array([1, 0, 0, 0], np.int32), np.ones(4, bool))
    assert out["dr_grpo"].dtype == jnp.float32
    np.testing.assert_allclose(out["dr_grpo"], [0.75, -0.25, -0.25, -0.25])


def test_shape_checks():
    with pytest.raises(ValueError, match="rank 1"):
        grpo_advantages(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="mask shape"):
        grpo_advantages(np.zeros(3, np.float32), np.ones(4, bool))
    with pytest.raises(ValueError, match="ddof"):
        grpo_advantages(np.zeros(3, np.float32), ddof=2)
    with pytest.raises(ValueError, match="std_floor"):
        mean_baseline_advantages(np.zeros(3, np.float32), normalize_std=True, std_floor=0.0)
