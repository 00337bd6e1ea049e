"""The code environment's retry observation: its history mode's prompt with the
feedback's diagnostics replaced by "Try again." (the revision instruction, and in
mode "last" the task and the previous code, kept)."""

import pytest

from mtrl.envs.code.env import CodeEnv, CodeEnvConfig
from mtrl.rollout.environment import RETRY_MESSAGE
from tests.envs.code.conftest import ADD, SubprocessExecutor

WRONG = "def add(a, b):\n    return a - b\n"


@pytest.mark.parametrize("history_mode", ["full", "last", "feedback"])
def test_the_retry_keeps_the_prompt_and_drops_the_diagnostics(history_mode):
    env = CodeEnv(CodeEnvConfig(history_mode=history_mode), sandbox=SubprocessExecutor())
    state, (first,) = env.reset(ADD)
    result = env.step([state], [(f"```python\n{WRONG}```",)], 1)[0]
    (observed,) = result.observations
    (retry,) = env.retry_observations(result)
    assert "Tests: 0/1 passed" in observed and "assert add(1, 2) == 3" in observed
    assert "Tests" not in retry and "assert" not in retry
    revise = CodeEnvConfig().templates.revise_instruction(ADD, 1, 0)
    assert retry.endswith(f"{RETRY_MESSAGE}\n{revise}")
    if history_mode == "last":  # a whole prompt: the task and the previous code stay
        assert retry.startswith(first) and "Your previous response:" in retry
        assert WRONG.strip() in retry
    else:
        assert retry == f"{RETRY_MESSAGE}\n{revise}"


def test_two_agents_each_get_their_own_revision_instruction():
    env = CodeEnv(CodeEnvConfig(num_agents=2, history_mode="feedback"),
                  sandbox=SubprocessExecutor())
    state, _ = env.reset(ADD)
    result = env.step([state], [("def aux(a, b):\n    return a\n", WRONG)], 1)[0]
    helper, main = env.retry_observations(result)
    assert helper.startswith(RETRY_MESSAGE) and main.startswith(RETRY_MESSAGE)
    assert "`aux`" in helper and "`add`" in main
