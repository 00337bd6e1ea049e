import warnings

import jax
import numpy as np
import pytest

from tests.credit.jitted import assert_trees_match, vmapped_and_looped
from mtrl.credit import RewardRecipe


def test_combine_hand_values():
    recipe = RewardRecipe(step_penalty=0.02, invalid_tool_penalty=0.1, progress_coef=0.2,
                          max_turns=5, on_dominance="raise")
    out = jax.jit(recipe.combine)(np.array([True, False, False]), np.array([3, 5, 1]),
                                  np.array([1, 0, 2]), np.array([1.0, 0.5, 2.0], np.float32))
    np.testing.assert_allclose(out.outcome, [1, -1, -1])
    np.testing.assert_allclose(out.step, [-0.06, -0.1, -0.02], atol=1e-7)
    np.testing.assert_allclose(out.invalid, [-0.1, 0.0, -0.2], atol=1e-7)
    np.testing.assert_allclose(out.progress, [0.2, 0.1, 0.2], atol=1e-7)  # progress clipped to 1
    np.testing.assert_allclose(out.total, [1.04, -1.0, -1.02], atol=1e-6)
    np.testing.assert_array_equal(out.shaping_exceeds_outcome, False)


def test_combine_vmap_over_batches_matches_loop():
    recipe = RewardRecipe(step_penalty=0.02, invalid_tool_penalty=0.1, progress_coef=0.2,
                          max_turns=5, on_dominance="raise")
    success = np.array([[True, False, False], [False, True, True]])
    turns = np.array([[3, 5, 1], [2, 4, 5]])
    invalid = np.array([[1, 0, 2], [0, 3, 1]])
    progress = np.array([[1.0, 0.5, 2.0], [-0.5, 0.25, 0.75]], np.float32)
    mapped, looped = vmapped_and_looped(recipe.combine, success, turns, invalid, progress)
    assert_trees_match(mapped, looped)
    np.testing.assert_allclose(mapped.total[0], [1.04, -1.0, -1.02], atol=1e-6)  # hand values
    # Row 1: −1 − 0.04 + 0 + 0 (progress clipped to 0); 1 − 0.08 − 0.3 + 0.05;
    # 1 − 0.1 − 0.1 + 0.15.
    np.testing.assert_allclose(mapped.total[1], [-1.04, 0.67, 0.95], atol=1e-6)
    mapped, looped = vmapped_and_looped(recipe.combine, success, turns, invalid)  # no progress
    assert_trees_match(mapped, looped)


def test_default_recipe_lets_the_outcome_dominate():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        recipe = RewardRecipe()
    report = recipe.shaping_report()
    assert report.outcome_dominates
    assert report.max_penalty == pytest.approx(0.01 * 10 + 0.05 * 10)
    assert report.outcome_gap == 2.0


def test_shaping_that_can_flip_the_outcome_warns_or_raises():
    heavy = dict(step_penalty=0.1, invalid_tool_penalty=0.1, max_turns=10, max_invalid_calls=5)
    with pytest.warns(UserWarning, match="outweigh the outcome"):
        RewardRecipe(**heavy)
    with pytest.raises(ValueError, match="max penalty 1.5 > success reward 1"):
        RewardRecipe(**heavy, on_dominance="raise")
    assert not RewardRecipe(**heavy, on_dominance="ignore").shaping_report().outcome_dominates
    # A progress bonus above |failure reward| lets a failure end positive.
    with pytest.raises(ValueError, match="max bonus 1.5"):
        RewardRecipe(progress_coef=1.5, on_dominance="raise")
    # Ordering flip with 0/1 outcomes: penalty 0.6 + bonus 0.5 >= gap 1.
    with pytest.raises(ValueError, match="a failure can score as high as a success"):
        RewardRecipe(failure_reward=0.0, progress_coef=0.5, on_dominance="raise")


def test_realized_shaping_flag():
    recipe = RewardRecipe(success_reward=0.1, failure_reward=-0.1, step_penalty=0.05,
                          max_turns=1, max_invalid_calls=0, on_dominance="ignore")
    out = jax.jit(recipe.combine)(np.array([True, True]), np.array([1, 3]), np.array([0, 0]))
    np.testing.assert_array_equal(out.shaping_exceeds_outcome, [False, True])


def test_validation():
    with pytest.raises(ValueError, match="must exceed"):
        RewardRecipe(success_reward=0.0, failure_reward=0.0)
    with pytest.raises(ValueError, match="step_penalty"):
        RewardRecipe(step_penalty=-0.1)
    with pytest.raises(ValueError, match="on_dominance"):
        RewardRecipe(on_dominance="log")
    with pytest.raises(ValueError, match="num_turns"):
        RewardRecipe().combine(np.array([True]), np.array([1, 2]), np.array([0]))
    with pytest.raises(AttributeError):
        RewardRecipe().step_penalty = 1.0  # frozen
