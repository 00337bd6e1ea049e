"""CodeEnv under the episode-end rule: with `end_on_success` a program that passes
every test ends its episode (UFO's first success); without it (CoMLRL's fixed
horizon, the default) a solved branch keeps revising for its T turns."""

import pytest

from mtrl.envs.code.env import CodeEnv, CodeEnvConfig
from mtrl.envs.registry import EnvSection
from mtrl.training.advantages.estimators import CreditConfig
from mtrl.training.config.rules import episodes_end_at_success
from tests.envs.code.conftest import ADD
from tests.rollout.scripted import chain, chain_outcome, solve_at

RIGHT = "```python\ndef add(a, b):\n    return a + b\n```"
WRONG = "```python\ndef add(a, b):\n    return a - b\n```"


@pytest.mark.parametrize("solved_at", [1, 2, 3])
def test_end_on_success_stops_the_chain_at_the_passing_program(executor, solved_at):
    env = CodeEnv(CodeEnvConfig(num_agents=1, end_on_success=True), sandbox=executor)
    tree = chain(env, ADD, solve_at(solved_at, RIGHT, WRONG), 3)
    assert chain_outcome(tree) == (solved_at, True, True)


def test_without_end_on_success_a_solved_branch_keeps_revising(executor):
    env = CodeEnv(CodeEnvConfig(num_agents=1), sandbox=executor)
    tree = chain(env, ADD, solve_at(1, RIGHT, WRONG), 3)
    assert chain_outcome(tree) == (3, False, True)
    assert [bool(r.done[0, 0]) for r in tree.turns] == [True, True, True]


def test_ufo_needs_episodes_that_end_at_success():
    # The config-time check reads the code builder's trait; it says what the built
    # environment does.
    keeps, ends = EnvSection("code"), EnvSection.of("code", end_on_success=True)
    assert keeps.ends_on_success is False and ends.ends_on_success is True
    with pytest.raises(ValueError, match="config.env.end_on_success=True"):
        episodes_end_at_success(CreditConfig(estimator="ufo"), keeps)
    episodes_end_at_success(CreditConfig(estimator="magrpo"), keeps)
    episodes_end_at_success(CreditConfig(estimator="ufo"), ends)
    for name in ("math", "tool", "textworld"):  # end at an answer or a win, always
        episodes_end_at_success(CreditConfig(estimator="ufo"), EnvSection(name, 1))


def test_end_on_success_must_be_a_bool():
    with pytest.raises(ValueError, match="end_on_success"):
        CodeEnvConfig(end_on_success="yes")
