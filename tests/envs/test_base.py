"""TurnEnvironment: the step protocol is checked once, in the base class, for every
environment (it used to be re-written in code, math and tool, and TextWorld zipped a
short batch silently)."""

import dataclasses

import pytest

from mtrl.data.gsm8k import MathTask
from mtrl.envs.base import TurnEnvironment, check_step
from mtrl.envs.code import CodeEnv
from mtrl.envs.math import MathEnv, MathEnvConfig
from mtrl.envs.textworld.env import TextWorldEnv
from mtrl.envs.tool import ToolEnv
from mtrl.rollout.environment import StepResult

TASK = MathTask("t/0", "What is 2 + 5?", "7")


@pytest.mark.parametrize("env_type", [CodeEnv, MathEnv, ToolEnv, TextWorldEnv])
def test_every_environment_inherits_the_checks(env_type):
    assert issubclass(env_type, TurnEnvironment)
    assert "step" not in vars(env_type)  # it writes step_branches, never step
    fields = {f.name for f in dataclasses.fields(env_type.state_type)}
    assert {"turn", "ended"} <= fields | set(dir(env_type.state_type))


@pytest.mark.parametrize("states, actions, turn, error, match", [
    (1, [("a",), ("b",)], 1, ValueError, "1 states but 2 joint actions"),
    (1, [("a", "b")], 1, ValueError, r"actions\[0\] has 2 completions for 1 agents"),
    (1, [("a",)], 2, ValueError, r"states\[0\] has completed 0 turns; cannot play turn 2"),
    (1, [("a",)], 0, ValueError, "turn must be an int >= 1"),
    ("wrong", [("a",)], 1, TypeError, r"states\[0\] is str, not MathBranchState"),
])
def test_a_batch_that_breaks_the_protocol_is_one_line(states, actions, turn, error, match):
    env = MathEnv(MathEnvConfig())
    state, _ = env.reset(TASK)
    batch = [state] * states if isinstance(states, int) else [states]
    with pytest.raises(error, match=match) as raised:
        env.step(batch, actions, turn)
    assert "\n" not in str(raised.value)


def test_no_turn_after_the_episode_ended():
    env = MathEnv(MathEnvConfig())
    state, _ = env.reset(TASK)
    (solved,) = env.step([state], [("\\boxed{7}",)], 1)
    assert solved.ended and solved.state.ended
    with pytest.raises(ValueError, match=r"states\[0\]: the branch's episode has ended"):
        env.step([solved.state], [("\\boxed{7}",)], 2)


def test_the_environment_must_answer_every_branch():
    @dataclasses.dataclass(frozen=True)
    class State:
        turn: int = 0
        ended: bool = False

    class Short(TurnEnvironment):
        num_agents, state_type = 1, State

        def reset(self, task):
            return State(), ("go",)

        def step_branches(self, states, actions, turn):
            return [StepResult(0.0, False, ("",), State(turn))]  # one, whatever the batch

    with pytest.raises(RuntimeError, match="returned 1 results for 2 branches"):
        Short().step([State(), State()], [("a",), ("b",)], 1)
    check_step([State()], [("a",)], 1, num_agents=1, state_type=State)
