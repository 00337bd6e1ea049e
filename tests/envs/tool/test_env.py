"""ToolEnv on hand-made transcripts with the real sandbox: tool output as the next
observation (truncated with a note), answers ending the episode, MBPP submissions
judged by the task's tests, and malformed actions (empty, binary garbage, 100 KB,
invalid UTF-8, an unclosed block, a call that hangs) answered with a clear
observation and no reward."""

import pytest

from mtrl.data.gsm8k import MathTask
from mtrl.envs.code.task import CodeTask
from mtrl.envs.sandbox import Limits, SandboxPool
from mtrl.envs.tool import ToolEnv, ToolEnvConfig

MATH = MathTask("gsm8k/t/0", "What is 17 * 23?", "391")
CODE = CodeTask("mbpp/1", "Write a function add(a, b) returning the sum.", "add",
                tests=("assert add(1, 2) == 3", "assert add(-1, 1) == 0"))


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(num_workers=1, limits=Limits(wall_s_per_test=1.0, wall_s_total=2.0)) as p:
        yield p


@pytest.fixture
def env(pool):
    return ToolEnv(ToolEnvConfig(max_turns=3, max_output_chars=80), sandbox=pool)


def play(env, task, turns):
    state, _ = env.reset(task)
    out = []
    for turn, text in enumerate(turns, start=1):
        (result,) = env.step([state], [(text,)], turn)
        out.append(result)
        state = result.state
    return out


def test_compute_then_answer(env):
    r1, r2 = play(env, MATH, ["```python\nprint(17 * 23)\n```", "It is \\boxed{391}."])
    assert r1.observations == ("Output:\n391",) and r1.reward == 0.0 and not r1.done
    assert r1.info["kind"] == "call" and r1.info["invalid_calls"] == 0 and not r1.ended
    assert r1.info["void"] == (False,) and r1.info["truth"] == "391"
    assert (r2.reward, r2.done, r2.ended, r2.info["correct"]) == (1.0, True, True, True)
    # After the answer the branch is over: no later turn may be played on it.
    with pytest.raises(ValueError, match="ended"):
        env.step([r2.state], [("more",)], 3)


def test_a_wrong_answer_ends_the_episode_unsolved(env):
    (r1,) = play(env, MATH, ["\\boxed{390}"])
    assert (r1.reward, r1.done, r1.ended, r1.info["correct"]) == (0.0, False, True, False)


def test_the_last_turn_without_an_answer_ends_the_episode(env):
    r1, r2, r3 = play(env, MATH, ["```python\nprint(1)\n```"] * 3)  # max_turns=3
    assert [r.ended for r in (r1, r2, r3)] == [False, False, True] and not r3.done


def test_errors_and_long_output_are_reported_and_truncated(env):
    r1, r2, r3 = play(env, MATH, ["```python\nprint('x' * 1000)\n```",
                                  "```python\nprint('before')\n1/0\n```",
                                  "```python\ndef f(:\n```"])
    assert "[output truncated: 80 of 1000 characters shown]" in r1.observations[0]
    assert r1.info["invalid_calls"] == 0
    assert r2.observations[0] == "Output:\nbefore\nError: ZeroDivisionError: division by zero"
    assert r2.info["invalid_calls"] == 1
    assert "SyntaxError" in r3.observations[0] and r3.info["invalid_calls"] == 1


def test_mbpp_write_test_then_submit(env):
    good = "```python\ndef add(a, b):\n    return a + b\nprint(add(2, 3))\n```"
    r1, r2 = play(env, CODE, [good, "Tests pass. \\boxed{submit}"])
    assert r1.observations == ("Output:\n5",)
    # The submission without a block is the last code the tool ran.
    assert (r2.reward, r2.done, r2.info["progress"]) == (1.0, True, 1.0)
    half = "```python\ndef add(a, b):\n    return a + b if a > 0 else 9\n```\\boxed{submit}"
    (bad,) = play(env, CODE, [half])
    assert (bad.reward, bad.done, bad.info["correct"]) == (0.0, False, False)
    assert bad.info["progress"] == 0.5  # one of the two tests passes
    (empty,) = play(env, CODE, ["\\boxed{submit}"])  # nothing ever written
    assert empty.reward == 0.0 and "no code" in empty.observations[0]


@pytest.mark.parametrize("completion, kind", [
    ("", "void"),
    ("\x00\x01\xff\xfe" * 100, "void"),  # binary garbage (decoded bytes)
    ("7" * 100_000, "void"),  # 100 KB, no block, no box
    (b"\xff\xfe\xfa not utf-8 \\boxed{391}", "answer"),  # the box after the garbage counts
    ("```python\nprint(1)", "invalid"),  # never closed
    ("```python\nwhile True:\n    pass\n```", "call"),  # hangs: the sandbox times out
    ("```python\nimport os\nos._exit(3)\n```", "call"),
    ("```python\nprint('\\udcff' * 3)\n```", "call"),  # unencodable output
])
def test_malformed_actions_get_a_clear_observation_and_no_reward(env, completion, kind):
    state, _ = env.reset(MATH)
    (result,) = env.step([state], [(completion,)], 1)
    assert result.info["kind"] == kind
    if kind == "answer":
        assert result.reward == 1.0
        return
    assert result.reward == 0.0 and not result.done
    text = result.observations[0]
    assert 0 < len(text) < 600 and text.isprintable() or "\n" in text
    if kind == "void":
        assert result.info["void"] == (True,) and "No ```python block" in text
    if kind == "invalid":
        assert result.info["invalid_calls"] == 1 and "not closed" in text
    if "while True" in completion:
        assert "Timeout" in text and result.info["invalid_calls"] == 1
    if "_exit" in completion:
        assert "exited" in text and result.info["invalid_calls"] == 1


def test_the_turn_limit_ends_the_episode(env):
    r1, r2, r3 = play(env, MATH, ["hmm", "hmm", "hmm"])
    assert not r2.state.ended and r3.state.ended and not r3.done


def test_mbpp_suite_tasks_accept_their_canonical_solution(env, shared_data):
    from mtrl.data.suite import DataConfig, build_suite
    suite = build_suite(DataConfig(name="mbpp_sanitized", path=str(shared_data / "mbpp"),
                                   train_split="train", eval_split="validation",
                                   num_eval=2), 0)
    tasks = suite.tasks("validation")[:2]
    states, actions = [], []
    for task in tasks:
        state, (prompt,) = env.reset(task)
        assert task.entry_point in prompt and "\\boxed{submit}" in prompt
        states.append(state)
        actions.append((f"```python\n{task.canonical_solution}\n```\n\\boxed{{submit}}",))
    results = env.step(states, actions, 1)
    assert [r.reward for r in results] == [1.0, 1.0]
    assert all(r.info["progress"] == 1.0 for r in results)


def test_call_reward_pays_a_clean_call_that_prints_the_answer(pool):
    env = ToolEnv(ToolEnvConfig(max_turns=3, call_reward=0.5), sandbox=pool)
    r1, r2 = play(env, MATH, ["```python\nprint(17 * 23)\n```", "\\boxed{391}"])
    assert (r1.reward, r1.done, r1.info["correct"]) == (0.5, False, False)
    assert (r2.reward, r2.done) == (1.0, True)  # the outcome turn: no call, no bonus
    (wrong,) = play(env, MATH, ["```python\nprint(17 + 23)\n```"])
    (failed,) = play(env, MATH, ["```python\nprint(391)\nraise ValueError\n```"])
    assert wrong.reward == 0.0 and failed.reward == 0.0
    with pytest.raises(ValueError, match="call_reward must be a number >= 0"):
        ToolEnvConfig(call_reward=-1.0)
