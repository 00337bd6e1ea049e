"""CodeEnv with the test executor (a fresh interpreter per program; see conftest)."""

import dataclasses

import pytest

from mtrl.rollout.environment import StepResult
from mtrl.envs.code import (CodeBranchState, CodeEnv, CodeEnvConfig, CodeRewardConfig,
                            LocalModelExpert, PromptTemplates, ReferenceExpert)

ADD_OK = "```python\ndef add(a, b):\n    return a + b\n```"
WRONG_BODY = "    return 0 if a < 5 else a + b"  # passes tests 2 and 3, fails test 1
ADD_WRONG = f"Here you go:\n```python\ndef add(a, b):\n{WRONG_BODY}\n```\nprint(add(1, 2))"
ADD_BROKEN = "```python\ndef add(a, b):\n    return (a + b\n```"
AUX_SUM = "```python\ndef aux(a, b):\n    return a + b\n```"
MAIN_USES_AUX = "```python\ndef add(a, b):\n    s = aux(a, b)\n    return s\n```"


def test_reset_gives_role_prompts_and_an_empty_branch(tasks):
    env = CodeEnv(CodeEnvConfig(num_agents=2), sandbox=object())  # type: ignore[arg-type]
    state, prompts = env.reset(tasks[0])
    assert state == CodeBranchState(task=tasks[0], turn=0, responses=((), ()))
    assert prompts == PromptTemplates().first_turn(tasks[0], 2)
    with pytest.raises(TypeError, match="CodeTask"):
        env.reset("not a task")


def test_step_runs_every_test_of_every_branch_in_one_batched_call(tasks, executor):
    env = CodeEnv(CodeEnvConfig(num_agents=1, reward="pass_rate", sandbox_slice=1),
                  sandbox=executor)
    add_state, _ = env.reset(tasks[0])
    sq_state, _ = env.reset(tasks[1])
    squares_ok = "def sum_squares(xs):\n    return sum(x * x for x in xs)\n"
    out = env.step([add_state, add_state, sq_state, add_state],
                   [(ADD_OK,), (ADD_WRONG,), (squares_ok,), (ADD_BROKEN,)], turn=1)
    assert len(executor.calls) == 1  # one sandbox call for the whole batch
    sent = executor.calls[0]
    assert len(sent) == 3  # the syntax error is not worth running
    assert [p.tests for p in sent] == [tasks[0].tests, tasks[0].tests, tasks[1].tests]
    assert [r.reward for r in out] == pytest.approx([1.0, 2 / 3, 1.0, 0.0])
    assert [r.done for r in out] == [True, False, True, False]
    assert out[1].info["num_passed"] == 2 and out[1].info["num_tests"] == 3
    assert out[3].info["tests_run"] is False and out[3].info["syntax_error"][1].line == 2
    assert all(isinstance(r, StepResult) and not r.reset_context for r in out)
    # Extraction dropped the print, the program is just the function.
    assert sent[1].code == "def add(a, b):\n    return 0 if a < 5 else a + b"


def test_full_history_observation_is_feedback_only(tasks, executor):
    env = CodeEnv(CodeEnvConfig(num_agents=1, sandbox_slice="all"), sandbox=executor)
    state, _ = env.reset(tasks[0])
    (result,) = env.step([state], [(ADD_WRONG,)], turn=1)
    (obs,) = result.observations
    assert obs.startswith("Diagnostics of the previous attempt:")
    assert "return 0 if" not in obs and tasks[0].prompt not in obs  # already in context
    assert "- Tests: 2/3 passed." in obs
    assert "FAILED: assert add(1, 2) == 3 -> AssertionError" in obs
    assert result.reset_context is False


def test_last_history_observation_is_a_complete_prompt(tasks, executor):
    env = CodeEnv(CodeEnvConfig(num_agents=1, history_mode="last"), sandbox=executor)
    state, (first_prompt,) = env.reset(tasks[0])
    (result,) = env.step([state], [(ADD_WRONG,)], turn=1)
    (obs,) = result.observations
    assert result.reset_context is True
    assert obs.startswith(first_prompt)
    assert f"Your previous response:\n```python\ndef add(a, b):\n{WRONG_BODY}\n```" in obs
    assert "- Tests: 1/1 passed." not in obs and "- Tests: 0/1 passed." in obs  # slice 1
    assert "print(add(1, 2))" not in obs  # the extracted code, not the raw completion


def test_feedback_history_observation_is_the_feedback_alone(tasks, executor):
    env = CodeEnv(CodeEnvConfig(num_agents=1, history_mode="feedback"), sandbox=executor)
    state, (first_prompt,) = env.reset(tasks[0])
    (result,) = env.step([state], [(ADD_WRONG,)], turn=1)
    (obs,) = result.observations
    assert result.reset_context is True  # the rollout restarts the context with it
    assert first_prompt not in obs and WRONG_BODY not in obs
    assert "- Tests: 0/1 passed." in obs


def test_branch_states_are_immutable_and_turns_are_checked(tasks, executor):
    env = CodeEnv(CodeEnvConfig(num_agents=2, feedback_mode="plain"), sandbox=executor)
    root, _ = env.reset(tasks[0])
    first = env.step([root, root], [(AUX_SUM, MAIN_USES_AUX), ("", ADD_WRONG)], turn=1)
    assert root.turn == 0 and root.responses == ((), ())
    child = first[0].state
    assert child.turn == 1 and child.responses == ((AUX_SUM,), (MAIN_USES_AUX,))
    assert first[1].state.responses == (("",), (ADD_WRONG,))
    second = env.step([child], [(AUX_SUM, ADD_OK)], turn=2)
    assert second[0].state.responses == ((AUX_SUM, AUX_SUM), (MAIN_USES_AUX, ADD_OK))
    assert second[0].state.last_verdict.analysis.codes[1] == "def add(a, b):\n    return a + b"
    with pytest.raises(ValueError, match="cannot play turn 3"):
        env.step([child], [(AUX_SUM, ADD_OK)], turn=3)
    with pytest.raises(ValueError, match="2 agents"):
        env.step([child], [(ADD_OK,)], turn=2)
    with pytest.raises(ValueError, match="1 states but 2"):
        env.step([child], [(AUX_SUM, ADD_OK)] * 2, turn=2)


def test_two_agent_level_reward_components(tasks, executor):
    env = CodeEnv(CodeEnvConfig(num_agents=2, reward_config=CodeRewardConfig(shift=1.0)),
                  sandbox=executor)
    state, _ = env.reset(tasks[0])
    (out,) = env.step([state], [(AUX_SUM, MAIN_USES_AUX)], turn=1)
    # 0.4 + 0.6 + 0.5 + 1.0 + 0.5 (calls aux); `s = aux(); return s` is a thin wrapper.
    assert out.components["raw"] == pytest.approx(3.0)
    assert out.reward == pytest.approx(2.0)
    assert out.components["level4_not_wrapper"] == 0.0
    assert env.max_reward == pytest.approx(3.0)


def test_bytes_and_junk_completions_do_not_crash(tasks, executor):
    env = CodeEnv(CodeEnvConfig(num_agents=2), sandbox=executor)
    state, _ = env.reset(tasks[0])
    out = env.step([state, state], [(b"\xff\xfe\x00", "I don't know."), ("", "")], turn=1)
    assert [r.reward for r in out] == [0.0, 0.0]
    assert executor.calls == []  # nothing runnable, no sandbox call
    assert "- Tests: not run (no code)." in out[0].observations[1]


def test_expert_edits_needs_an_expert_and_batches_requests(tasks, executor):
    with pytest.raises(ValueError, match="needs an expert"):
        CodeEnv(CodeEnvConfig(feedback_mode="expert_edits"), sandbox=executor)
    prompts_seen = []

    def generate(prompts):
        prompts_seen.append(prompts)
        return ["Use a + b." for _ in prompts]

    env = CodeEnv(CodeEnvConfig(num_agents=2, feedback_mode="expert_edits"), sandbox=executor,
                  expert=LocalModelExpert(generate))
    state, _ = env.reset(tasks[0])
    out = env.step([state, state], [(AUX_SUM, ADD_WRONG), (AUX_SUM, ADD_OK)], turn=1)
    assert len(prompts_seen) == 1 and len(prompts_seen[0]) == 2
    assert not any(test in prompts_seen[0][0] for test in tasks[0].tests)  # expert sees no tests
    assert "suggests these edits:\nUse a + b." in out[0].observations[0]
    seeing = CodeEnv(CodeEnvConfig(num_agents=2, feedback_mode="expert_edits",
                                   expert_sees_tests=True, sandbox_slice=-1),
                     sandbox=executor, expert=LocalModelExpert(generate))
    seeing.step([state], [(AUX_SUM, ADD_WRONG)], turn=1)
    # The slice (last test, which passes) does not limit what the expert sees.
    assert "FAILED: assert add(1, 2) == 3" in prompts_seen[-1][0]
    assert "- Tests: 2/3 passed." in prompts_seen[-1][0]


def test_reference_expert_in_the_loop(tasks, executor):
    env = CodeEnv(CodeEnvConfig(num_agents=1, feedback_mode="expert_edits",
                                history_mode="last"),
                  sandbox=executor, expert=ReferenceExpert())
    state, _ = env.reset(tasks[0])
    wrong, right = env.step([state, state], [(ADD_WRONG,), (ADD_OK,)], turn=1)
    assert f"- Replace line 2:\n    {WRONG_BODY}\n  with:\n        return a + b" in (
        wrong.observations[0])
    assert "looks correct" in right.observations[0]


def test_config_validation():
    with pytest.raises(KeyError, match="must be one of"):
        CodeEnvConfig(feedback_mode="nope")
    with pytest.raises(KeyError, match="must be one of"):
        CodeEnvConfig(reward="nope")
    with pytest.raises(ValueError, match="sandbox_slice"):
        CodeEnvConfig(sandbox_slice=3)
    with pytest.raises(ValueError, match="history_mode"):
        CodeEnvConfig(history_mode="some")
    with pytest.raises(ValueError, match="1 or 2 agents"):
        CodeEnvConfig(num_agents=3)
    config = CodeEnvConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.num_agents = 2  # type: ignore[misc]


# HumanEval/44: the split keeps six asserts and drops `for x in range(2, 8): assert
# candidate(x, x + 1) == str(x)`. This program passes the six and fails the loop.
CHANGE_BASE_SPLIT_ONLY = """```python
def change_base(x, base):
    if x < base:
        return "0"
    digits = ""
    while x > 0:
        digits = str(x % base) + digits
        x //= base
    return digits
```"""


@pytest.fixture(scope="module")
def change_base_task():
    from mtrl.data import load_humaneval

    (task,) = [t for t in load_humaneval() if t.task_id == "HumanEval/44"]
    assert len(task.tests) == 6 and "for x in range(2, 8)" in task.test_code
    return task


def test_reward_and_done_use_the_full_test_code(change_base_task, executor):
    task = change_base_task
    env = CodeEnv(CodeEnvConfig(num_agents=1, reward="pass_rate", sandbox_slice="all"),
                  sandbox=executor)
    state, _ = env.reset(task)
    canonical = f"```python\n{task.canonical_solution}\n```"
    split_only, right = env.step([state, state], [(CHANGE_BASE_SPLIT_ONLY,), (canonical,)],
                                 turn=1)
    (program, _) = executor.calls[0]
    assert program.tests[:6] == task.tests and len(program.tests) == 7
    assert program.tests[6].startswith(task.test_code.rstrip())
    # Every split assert passes, the full check does not: not rewarded as all-passed.
    verdict = split_only.state.last_verdict
    assert [t.status for t in verdict.result.tests] == ["passed"] * 6 + ["failed"]
    assert split_only.done is False and split_only.info["all_passed"] is False
    assert split_only.reward == pytest.approx(6 / 7) and split_only.reward < env.max_reward
    assert right.done is True and right.reward == pytest.approx(1.0)
    # Feedback shows the split asserts only, never the full test code.
    (obs,) = split_only.observations
    assert "- Tests: 6/6 passed." in obs and "range(2, 8)" not in obs and "check(" not in obs
    assert verdict.feedback_tests == verdict.result.tests[:6]
    hidden = CodeEnv(CodeEnvConfig(num_agents=1, sandbox_slice="all", count_hidden_tests=True,
                                   feedback_mode="level_feedback"), sandbox=executor)
    (counted,) = hidden.step([state], [(CHANGE_BASE_SPLIT_ONLY,)], turn=1)
    assert "- Tests: 6/7 passed." in counted.observations[0]
    assert "range(2, 8)" not in counted.observations[0]


def test_level_reward_on_a_split_only_program_stays_below_the_maximum(change_base_task,
                                                                      executor):
    env = CodeEnv(CodeEnvConfig(num_agents=1), sandbox=executor)
    state, _ = env.reset(change_base_task)
    (out,) = env.step([state], [(CHANGE_BASE_SPLIT_ONLY,)], turn=1)
    assert out.components["level3_tests"] == pytest.approx(6 / 7)
    assert out.reward < env.max_reward and not out.done
