import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.credit.jitted import assert_trees_match, jitted, vmapped_and_looped
from mtrl.credit import (broadcast_turns_to_tokens, discounted_returns, mt_grpo_advantages,
                         mt_grpo_token_advantages, per_turn_advantages)

TURN_REWARDS = np.array([1.5, 1.0, 0.0, 0.5], np.float32)
OUTCOME_REWARDS = np.array([2.0, 0.5, 1.0, 0.0], np.float32)
NON_FINAL = [2.47903, -0.05187, -1.01535, -1.41181]
FINAL = [1.31731, -0.43910, 0.14637, -1.02458]


@jax.jit
def mt_grpo_all(turn, outcome):
    return {
        "default": mt_grpo_advantages(turn, outcome),
        "explicit": mt_grpo_advantages(turn, outcome, turn_coef=1.0, ddof=1, epsilon=1e-4),
        "turn_half": mt_grpo_advantages(turn, outcome, turn_coef=0.5),
        "outcome_half": mt_grpo_advantages(turn, outcome, turn_coef=0.5, lambda_on="outcome"),
    }


def test_mt_grpo_reference_numbers():
    out = mt_grpo_all(TURN_REWARDS, OUTCOME_REWARDS)
    for key in ("default", "explicit"):
        np.testing.assert_allclose(out[key].non_final, NON_FINAL, atol=1e-5)
        np.testing.assert_allclose(out[key].final, FINAL, atol=1e-5)


def test_mt_grpo_lambda_placement_flag():
    out = mt_grpo_all(TURN_REWARDS, OUTCOME_REWARDS)
    a_outcome = np.asarray(FINAL)
    a_turn = np.asarray(NON_FINAL) - a_outcome  # λ = 1 in the reference
    np.testing.assert_allclose(out["turn_half"].non_final, a_outcome + 0.5 * a_turn, atol=1e-5)
    np.testing.assert_allclose(out["outcome_half"].non_final, a_turn + 0.5 * a_outcome,
                               atol=1e-5)
    np.testing.assert_allclose(out["outcome_half"].final, a_outcome, atol=1e-5)


def test_mt_grpo_tokens_of_a_two_turn_group():
    token_turn = np.array([[0, 0, 1, 1, 1, 0, 2, 2, 0]] * 4, np.int32)
    final_turn = np.full(4, 2, np.int32)

    @jax.jit
    def tokens(turn, outcome, token_turn, final_turn):
        adv = mt_grpo_advantages(turn, outcome)
        return jax.vmap(mt_grpo_token_advantages)(adv.non_final, adv.final, token_turn,
                                                  final_turn)

    out = np.asarray(tokens(TURN_REWARDS, OUTCOME_REWARDS, token_turn, final_turn))
    np.testing.assert_allclose(out[:, 2], NON_FINAL, atol=1e-5)  # first-turn tokens
    np.testing.assert_allclose(out[:, 4], NON_FINAL, atol=1e-5)
    np.testing.assert_allclose(out[:, 6], FINAL, atol=1e-5)  # final-turn tokens
    np.testing.assert_array_equal(out[:, [0, 1, 5, 8]], 0.0)  # prompt / observation / pad


def test_discounted_returns_hand_values():
    rewards = np.array([1.0, 0.0, 2.0, 5.0], np.float32)
    mask = np.array([True, True, True, False])

    @jax.jit
    def both(r, m):
        return discounted_returns(r, m, 0.5), discounted_returns(r, None, 1.0)

    half, undiscounted = both(rewards, mask)
    # R_3 = 2, R_2 = 0 + 0.5·2 = 1, R_1 = 1 + 0.5·1 = 1.5; the absent 4th turn is 0.
    np.testing.assert_allclose(half, [1.5, 1.0, 2.0, 0.0])
    np.testing.assert_allclose(undiscounted, [8.0, 7.0, 7.0, 5.0])


def test_per_turn_advantages_group_by_turn_and_all():
    rewards = np.array([[1.0, 1.0], [0.0, 3.0], [2.0, 0.0]], np.float32)
    mask = np.array([[True, True], [True, True], [True, False]])

    @jax.jit
    def both(r, m):
        return (per_turn_advantages(r, m, gamma=1.0, estimator="dr_grpo", group_by="turn"),
                per_turn_advantages(r, m, gamma=1.0, estimator="dr_grpo", group_by="all"))

    by_turn, pooled = both(rewards, mask)
    # Returns: [[2, 1], [3, 3], [2, absent]]. Turn 1 mean 7/3; turn 2 mean over 2 → 2.
    np.testing.assert_allclose(by_turn, [[2 - 7 / 3, -1], [3 - 7 / 3, 1], [2 - 7 / 3, 0]],
                               atol=1e-6)
    # Pooled mean over the 5 present returns = 11/5.
    np.testing.assert_allclose(pooled, [[2 - 2.2, 1 - 2.2], [0.8, 0.8], [2 - 2.2, 0]],
                               atol=1e-6)


def test_broadcast_turns_to_tokens():
    out = jitted(broadcast_turns_to_tokens, np.array([10.0, 20.0, 30.0], np.float32),
                 np.array([0, 1, 1, 2, 0, 3, 4], np.int32))
    np.testing.assert_allclose(out, [0, 10, 10, 20, 0, 30, 0])


def test_vmapped_discounted_returns_do_not_retrace():
    traces = []

    @jax.jit
    def returns(r, m):
        traces.append(1)
        return jax.vmap(lambda x, y: discounted_returns(x, y, 0.9))(r, m)

    rng = np.random.default_rng(0)
    for _ in range(2):
        out = returns(rng.normal(size=(3, 4)).astype(np.float32), rng.random((3, 4)) < 0.8)
    assert len(traces) == 1 and out.shape == (3, 4)


def test_mt_grpo_vmap_over_groups_matches_loop():
    rng = np.random.default_rng(0)
    turn = np.stack([TURN_REWARDS, *rng.normal(size=(2, 4))]).astype(np.float32)
    outcome = np.stack([OUTCOME_REWARDS, *rng.normal(size=(2, 4))]).astype(np.float32)
    mask = np.array([[True] * 4, [True, False, True, True], [False, True, True, False]])
    for coef, placement in ((1.0, "turn"), (0.5, "outcome")):
        mapped, looped = vmapped_and_looped(
            lambda t, o, m: mt_grpo_advantages(t, o, m, turn_coef=coef, lambda_on=placement),
            turn, outcome, mask)
        assert_trees_match(mapped, looped)
    mapped, _ = vmapped_and_looped(mt_grpo_advantages, turn, outcome, mask)
    np.testing.assert_allclose(mapped.non_final[0], NON_FINAL, atol=1e-5)  # hand reference
    np.testing.assert_allclose(mapped.final[0], FINAL, atol=1e-5)
    np.testing.assert_array_equal(mapped.final[1:][~mask[1:]], 0.0)  # absent members


def test_per_turn_vmap_over_groups_matches_loop():
    rng = np.random.default_rng(1)
    hand = np.array([[1.0, 1.0], [0.0, 3.0], [2.0, 0.0]], np.float32)
    hand_mask = np.array([[True, True], [True, True], [True, False]])
    rewards = np.stack([hand, *rng.normal(size=(2, 3, 2))]).astype(np.float32)
    mask = np.stack([hand_mask, rng.random((3, 2)) < 0.7, np.ones((3, 2), bool)])
    for opts in (dict(estimator="dr_grpo", group_by="turn", gamma=1.0),
                 dict(estimator="grpo", group_by="all", gamma=0.9)):
        mapped, looped = vmapped_and_looped(
            lambda r, m: per_turn_advantages(r, m, **opts), rewards, mask)
        assert_trees_match(mapped, looped)
        if opts["estimator"] == "dr_grpo":  # group 0 is the hand example above
            np.testing.assert_allclose(mapped[0], [[2 - 7 / 3, -1], [3 - 7 / 3, 1],
                                                   [2 - 7 / 3, 0]], atol=1e-6)


def test_checks():
    with pytest.raises(ValueError, match="lambda_on"):
        mt_grpo_advantages(TURN_REWARDS, OUTCOME_REWARDS, lambda_on="both")
    with pytest.raises(ValueError, match="same"):
        mt_grpo_advantages(TURN_REWARDS, OUTCOME_REWARDS[:3])
    with pytest.raises(ValueError, match="rank 1"):
        discounted_returns(np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match="gamma"):
        discounted_returns(np.zeros(2, np.float32), gamma=-0.1)
    with pytest.raises(ValueError, match="group_by"):
        per_turn_advantages(np.zeros((2, 2), np.float32), group_by="node")
    with pytest.raises(ValueError, match="integer"):
        broadcast_turns_to_tokens(np.zeros(2, np.float32), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="scalars"):
        mt_grpo_token_advantages(np.zeros(2, np.float32), 0.0, np.zeros(3, np.int32), 2)
    with pytest.raises(ValueError, match="token_turn must have an integer dtype"):
        mt_grpo_token_advantages(1.0, 0.0, np.array([0.0, 1.0, 2.0], np.float32), 2)


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16])
def test_discounted_returns_low_precision_rewards_with_traced_gamma(dtype):
    # Regression: the scan carry took the rewards' dtype while γ·R promoted to float32.
    rewards = jnp.asarray([1.0, 0.0, 2.0], dtype)
    out = jax.jit(lambda g: discounted_returns(rewards, None, g))(jnp.float32(0.5))
    assert out.dtype == dtype
    np.testing.assert_allclose(np.asarray(out, np.float32), [1.5, 1.0, 2.0])
