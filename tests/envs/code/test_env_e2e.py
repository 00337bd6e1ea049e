"""End to end: a two-agent CodeEnv over three hand-made tasks, two turns of scripted
completions, every feedback mode, the real sandbox."""

import pytest

from mtrl.envs.code import FEEDBACK_MODES, CodeEnv, CodeEnvConfig, PromptTemplates, ReferenceExpert
from mtrl.envs.sandbox import Limits, SandboxPool


def fenced(code: str) -> str:
    return f"Here is my function.\n```python\n{code}\n```\nprint('example')"


# Turn 1, per task (ADD, SQUARES, MAX_GAP):
#  ADD: agent 1's aux does not compile ('(' never closed, line 2, column 12).
#  SQUARES: everything but the last test ([3] -> 9) passes.
#  MAX_GAP: all tests pass, but main calls aux once without using the result: aux's
#  value reaches no return, so no "not a wrapper" bonus and the penalty.
TURN1 = [
    ("def aux(a, b):\n    return (a + b", "def add(a, b):\n    s = aux(a, b)\n    return s"),
    ("def aux(xs):\n    return [x * x for x in xs]",
     "def sum_squares(xs):\n    sq = aux(xs)\n    return sum(sq) if len(xs) != 1 else 0"),
    ("def aux(xs):\n    return [abs(a - b) for a, b in zip(xs, xs[1:])]",
     "def max_gap(xs):\n    aux(xs)\n    return max(abs(a - b) for a, b in zip(xs, xs[1:]))"),
]
TURN2 = [
    ("def aux(a, b):\n    return a + b", "def add(a, b):\n    s = aux(a, b)\n    return s"),
    ("def aux(xs):\n    return [x * x for x in xs]",
     "def sum_squares(xs):\n    sq = aux(xs)\n    return sum(sq)"),
    ("def aux(xs):\n    return [abs(a - b) for a, b in zip(xs, xs[1:])]",
     "def max_gap(xs):\n    gaps = aux(xs)\n    return max(gaps)"),
]
# Level reward by hand (CodeRewardConfig defaults):
#  turn 1: ADD 0.6 (main only; syntax stops it); SQUARES 0.4+0.6+0.5+2/3+0.5+1.0;
#          MAX_GAP 0.4+0.6+0.5+1.0+0.5-0.5
#  turn 2: ADD is a thin wrapper (no +1.0); the others get everything.
TURN1_REWARDS = [0.6, 3.0 + 2 / 3, 2.5]
TURN2_REWARDS = [3.0, 4.0, 4.0]


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(num_workers=2) as sandbox:
        yield sandbox


def play(pool, tasks, **config):
    expert = ReferenceExpert() if config.get("feedback_mode") == "expert_edits" else None
    env = CodeEnv(CodeEnvConfig(num_agents=2, **config), sandbox=pool, expert=expert)
    roots = [env.reset(task)[0] for task in tasks]
    first = env.step(roots, [tuple(map(fenced, pair)) for pair in TURN1], turn=1)
    second = env.step([r.state for r in first], [tuple(map(fenced, pair)) for pair in TURN2],
                      turn=2)
    return env, first, second


@pytest.mark.parametrize("mode", FEEDBACK_MODES.names())
def test_two_turns_in_every_feedback_mode(pool, tasks, mode):
    env, first, second = play(pool, tasks, feedback_mode=mode)
    assert [r.reward for r in first] == pytest.approx(TURN1_REWARDS)
    assert [r.reward for r in second] == pytest.approx(TURN2_REWARDS)
    assert [r.done for r in first] == [False, False, True]
    assert [r.done for r in second] == [True, True, True]
    assert first[2].components["level4_ignored_result"] == -0.5
    assert first[1].components["pass_rate"] == pytest.approx(2 / 3)
    assert [s.state.turn for s in second] == [2, 2, 2]
    for result, task in zip(first + second, tasks + tasks):
        assert len(result.observations) == 2 and not result.reset_context
        for agent, text in enumerate(result.observations):
            own = result.state.last_verdict.analysis.codes[agent]
            assert own not in text  # full history: the response is already in context
            assert text.endswith(PromptTemplates().revise_instruction(task, 2, agent))
            if mode != "level_feedback":
                assert not any(test in text for test in task.tests)
    add_helper, add_main = first[0].observations
    sq_main, gap_main = first[1].observations[1], first[2].observations[1]
    if mode == "level_feedback":
        assert ("- Syntax: ERROR in your code at line 2, column 12: '(' was never closed."
                in add_helper)
        assert "- Syntax: ERROR in your teammate's code at line 2, column 12" in add_main
        assert "- Tests: not run (the code has a syntax error)." in add_main
        # sandbox_slice=1: only the first test (which passes) is shown and counted.
        assert "- Tests: 1/1 passed." in sq_main and "sum_squares([3])" not in sq_main
        assert "`max_gap` calls `aux` but ignores its result (line 2" in gap_main
    elif mode == "level_passed":
        assert "- Level 2 (syntax): not passed." in add_main
        assert "- Level 3 (all tests pass): not passed." in sq_main
        assert "- Level 3 (all tests pass): passed." in gap_main
        assert "- Level 4 (`max_gap` makes real use of `aux`): not passed." in gap_main
    elif mode == "passed":
        assert add_main.startswith("The previous attempt did not pass all tests.")
        assert gap_main.startswith("The previous attempt passed all tests.")
    elif mode == "plain":
        assert sq_main == PromptTemplates().revise_instruction(tasks[1], 2, 1)
    elif mode == "expert_edits":
        assert ("- Replace lines 2-3:\n        sq = aux(xs)\n        return sum(sq) if len(xs) "
                "!= 1 else 0\n  with:\n        return sum(x * x for x in xs)") in sq_main
        assert "looks correct" in gap_main


@pytest.mark.parametrize("sandbox_slice, shown, counted", [
    (-1, True, "0/1"), ("all", True, "2/3"), (None, True, "2/3"), (0, True, "2/3"),
    (1, False, "1/1")])
def test_sandbox_slice_selects_the_failing_test_shown(pool, tasks, sandbox_slice, shown, counted):
    _, first, _ = play(pool, tasks, sandbox_slice=sandbox_slice)
    sq_main = first[1].observations[1]
    line = "  FAILED: assert sum_squares([3]) == 9 -> AssertionError"
    assert (line in sq_main) is shown
    assert f"- Tests: {counted} passed." in sq_main
    assert first[1].reward == pytest.approx(TURN1_REWARDS[1])  # reward always uses all tests


def test_last_history_mode_prompts_are_complete(pool, tasks):
    _, first, second = play(pool, tasks, history_mode="last", show_teammate_code=True)
    helper_prompt, main_prompt = PromptTemplates().first_turn(tasks[1], 2)
    helper_obs, main_obs = first[1].observations
    assert first[1].reset_context and second[1].reset_context
    assert helper_obs.startswith(helper_prompt) and main_obs.startswith(main_prompt)
    aux_code, main_code = first[1].state.last_verdict.analysis.codes
    assert f"Your previous response:\n```python\n{aux_code}\n```" in helper_obs
    assert f"Your teammate's current `sum_squares` code:\n```python\n{main_code}\n```" in helper_obs
    assert f"Your previous response:\n```python\n{main_code}\n```" in main_obs
    assert "print('example')" not in main_obs
    assert main_obs.rstrip().endswith(
        PromptTemplates().revise_instruction(tasks[1], 2, 1))


def test_default_sandbox_is_created_on_demand_and_closed(tasks):
    config = CodeEnvConfig(num_agents=1, reward="pass_rate",
                           limits=Limits(wall_s_per_test=2.0, wall_s_total=5.0))
    with CodeEnv(config) as env:
        root, _ = env.reset(tasks[2])
        (result,) = env.step([root], [("def max_gap(xs):\n    return max(math.fabs(a - b) "
                                       "for a, b in zip(xs, xs[1:]))",)], turn=1)
        assert result.reward == 1.0 and result.done  # `math` comes from the task's setup
    env.close()  # closing twice is harmless


def test_humaneval_reward_runs_the_full_check_in_the_real_sandbox(pool):
    # HumanEval/151: the split drops `assert candidate(lst) == odd_sum` (lst spans
    # -99..99). Skipping numbers above 50 passes every kept assert, not that one.
    from mtrl.data import load_humaneval

    (task,) = [t for t in load_humaneval() if t.task_id == "HumanEval/151"]
    split_only = ("def double_the_difference(lst):\n    return sum(x * x for x in lst if "
                  "isinstance(x, int) and 0 < x < 50 and x % 2)")
    env = CodeEnv(CodeEnvConfig(num_agents=1, reward="pass_rate"), sandbox=pool)
    state, _ = env.reset(task)
    wrong, right = env.step([state, state], [(fenced(split_only),),
                                             (fenced(task.canonical_solution),)], turn=1)
    statuses = [t.status for t in wrong.state.last_verdict.result.tests]
    assert statuses == ["passed"] * len(task.tests) + ["failed"]
    assert not wrong.done and wrong.reward == pytest.approx(6 / 7)
    assert right.done and right.reward == 1.0


# Class 8 (docs/sandbox.md): a helper whose code rebinds main's function at run time (a
# profile hook installed from a class body; a write to its caller's globals) must
# not lift a wrong main to the full level reward: main's tests run on main's code.
WRONG_MAIN = "def add(a, b):\n    s = aux(a, b)\n    return s + 1"
HIJACKS = {
    "profile_hook": (
        "import sys\nclass Install:\n    def hook(frame, event, arg):\n"
        "        g = frame.f_globals\n        if callable(g.get('add')) and g['add'] is not right:\n"
        "            g['add'] = right\n    sys.setprofile(hook)\n"
        "def right(a, b):\n    return a + b\n"
        "def aux(a, b):\n    return a + b\n"),
    "caller_globals": (
        "import sys\ndef right(a, b):\n    return a + b\n"
        "def aux(a, b):\n    sys._getframe(1).f_globals['add'] = right\n    return a + b\n"),
    "patch_code_object": (
        "import gc\ndef right(a, b):\n    return a + b\n"
        "def aux(a, b):\n    for o in gc.get_objects():\n"
        "        if getattr(o, '__name__', '') == 'add' and callable(o):\n"
        "            o.__code__ = right.__code__\n    return a + b\n"),
}


@pytest.mark.parametrize("name", sorted(HIJACKS))
def test_helper_cannot_rewrite_main_at_run_time(pool, tasks, name):
    env = CodeEnv(CodeEnvConfig(num_agents=2), sandbox=pool)
    root, _ = env.reset(tasks[0])  # ADD
    (hijacked,) = env.step([root], [(fenced(HIJACKS[name]), fenced(WRONG_MAIN))], turn=1)
    assert hijacked.components["level3_tests"] == 0.0, hijacked.components
    assert hijacked.reward < 4.0
    honest = ("import math\ndef aux(a, b):\n    return a + b",
              "def add(a, b):\n    s = aux(a, b)\n    return int(math.fsum([s, 0]))")
    (ok,) = env.step([root], [tuple(map(fenced, honest))], turn=1)
    assert ok.components["level3_tests"] == 1.0  # helper's imports reach main
