"""ToolEnv under the episode-end rule: an answer ends the episode (right or wrong), and
so does the last allowed turn; no later turn is generated on that branch."""

import pytest

from mtrl.data.gsm8k import MathTask
from mtrl.envs.sandbox import Limits, SandboxPool
from mtrl.envs.tool import ToolEnv, ToolEnvConfig
from tests.rollout.scripted import chain, chain_outcome, solve_at

TASK = MathTask("gsm8k/t/0", "What is 17 * 23?", "391")
CALL = "```python\nprint(17 * 23)\n```"


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(num_workers=1, limits=Limits(wall_s_per_test=2.0)) as p:
        yield p


@pytest.mark.parametrize("solved_at", [1, 2, 3])
def test_a_chain_stops_at_its_answer(pool, solved_at):
    env = ToolEnv(ToolEnvConfig(max_turns=4), sandbox=pool)
    tree = chain(env, TASK, solve_at(solved_at, "\\boxed{391}", CALL), 4)
    assert chain_outcome(tree) == (solved_at, True, True)


def test_a_wrong_answer_ends_the_chain_unsolved(pool):
    env = ToolEnv(ToolEnvConfig(max_turns=4), sandbox=pool)
    tree = chain(env, TASK, solve_at(2, "\\boxed{390}", CALL), 4)
    assert chain_outcome(tree) == (2, True, False)
