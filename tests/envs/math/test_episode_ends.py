"""MathEnv under the episode-end rule: a scripted chain that solves at turn 1, 2 or 3
plays no turn after it; one that never solves plays all T turns."""

import pytest

from mtrl.data.gsm8k import MathTask
from mtrl.envs.math import MathEnv, MathEnvConfig
from tests.rollout.scripted import chain, chain_outcome, solve_at

TASK = MathTask("t/0", "What is 2 + 5?", "7")


@pytest.mark.parametrize("agents", [1, 2])
@pytest.mark.parametrize("solved_at", [1, 2, 3])
def test_a_chain_stops_at_the_turn_it_solves(solved_at, agents):
    env = MathEnv(MathEnvConfig(num_agents=agents, feedback_mode="correctness"))
    tree = chain(env, TASK, solve_at(solved_at, "\\boxed{7}", "\\boxed{1}"), 3)
    assert chain_outcome(tree) == (solved_at, True, True)
    assert [float(r.rewards[0, 0]) for r in tree.turns] == [0.0] * (solved_at - 1) + [1.0]


def test_a_chain_that_never_solves_plays_every_turn():
    tree = chain(MathEnv(), TASK, solve_at(99, "\\boxed{7}", "\\boxed{1}"), 3)
    assert chain_outcome(tree) == (3, False, False)
