"""Cross joint mode: returns are summed per completion, then baselined over its G."""

import numpy as np
import pytest

from mtrl.credit import magrpo_advantages


def one_turn(rewards_j, estimator, mode="cross", credit="sum", **opts):
    rewards = [np.asarray(rewards_j, np.float32)[None]]  # [P=1, J]
    expanded = [np.zeros_like(rewards[0], bool)]
    (adv,) = magrpo_advantages(rewards, expanded, gamma=1.0, mode=mode, num_agents=2,
                               num_generations=2, estimator=estimator, credit=credit, **opts)
    return np.asarray(adv[0])  # [N, G]


@pytest.mark.parametrize("estimator, expected", [
    # joint j = (g_agent0, g_agent1) row-major; only (0, 0) scores 1.
    # Agent a's summed returns over G: [1, 0] for both agents.
    ("rloo", [[1.0, -1.0], [1.0, -1.0]]),
    ("max", [[0.0, -1.0], [0.0, -1.0]]),
    ("mean", [[0.5, -0.5], [0.5, -0.5]]),
    ("raw", [[1.0, 0.0], [1.0, 0.0]]),
])
def test_cross_sums_returns_then_baselines_over_g(estimator, expected):
    # Regression: rloo summed joint-action advantages, giving 2/3 for agent 0's g=0.
    np.testing.assert_allclose(one_turn([1, 0, 0, 0], estimator), expected, atol=1e-6)


def test_cross_mean_credit_averages_returns():
    np.testing.assert_allclose(one_turn([1, 0, 0, 1], "raw", credit="mean"),
                               [[0.5, 0.5], [0.5, 0.5]], atol=1e-6)


def test_align_unchanged_by_the_order():
    adv = one_turn([1, 0], "rloo", mode="align")
    np.testing.assert_allclose(adv, [[1.0, -1.0], [1.0, -1.0]], atol=1e-6)
