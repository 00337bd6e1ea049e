import pytest

from mtrl.envs.code.analysis import analyze_candidate
from mtrl.envs.code.rewards import (CODE_REWARDS, CodeRewardConfig, level_reward, max_reward,
                                    pass_rate_reward)
from mtrl.envs.sandbox.types import ExecutionResult, SyntaxErrorInfo
from mtrl.envs.sandbox.types import TestResult as TR

AUX = "def aux(xs):\n    return [x * x for x in xs]"
MAIN_GOOD = "def f(xs):\n    squares = aux(xs)\n    return sum(squares)"
MAIN_WRAPPER = "def f(xs):\n    return aux(xs)"
MAIN_IGNORES = "def f(xs):\n    aux(xs)\n    total = aux(xs)\n    return sum(total)"
MAIN_ALONE = "def f(xs):\n    return sum(x * x for x in xs)"


def result(*statuses: str, helper_calls: int = 1, derived: int | None = None
           ) -> ExecutionResult:
    """Tests with these statuses; each passing one saw `helper_calls` calls of aux
    return a value and `derived` answers of main's own (default: one per call)."""
    derived = helper_calls if derived is None else derived
    return ExecutionResult(tests=tuple(
        TR(f"assert t{i}", s, helper_calls=helper_calls if s == "passed" else 0,
           derived_answers=derived if s == "passed" else 0)
        for i, s in enumerate(statuses)))


def level_parts(components):
    return sum(v for k, v in components.items() if k.startswith("level"))


@pytest.mark.parametrize("aux, main, statuses, expected", [
    # all levels, 2/4 tests: 0.4 + 0.6 + 0.5 + 0.5 + 0.5 (calls) + 1.0 (not wrapper)
    (AUX, MAIN_GOOD, ("passed", "passed", "failed", "error"), 3.5),
    (AUX, MAIN_GOOD, ("passed",) * 4, 4.0),
    # thin wrapper: no anti-wrapper bonus
    (AUX, MAIN_WRAPPER, ("passed",) * 4, 3.0),
    # one ignored call: -0.5, and no anti-wrapper bonus (the sandbox does not say
    # which call ran, so the used one cannot vouch for the ignored one)
    (AUX, MAIN_IGNORES, ("passed",) * 4, 2.5),
    # main does not call aux: levels 1-3 only
    (AUX, MAIN_ALONE, ("passed",) * 4, 2.5),
    # no test passed: no level-4 bonuses
    (AUX, MAIN_GOOD, ("failed",) * 4, 1.5),
    # aux missing: no aux points and no bonuses (calls to aux fail anyway)
    ("", MAIN_ALONE, ("passed",) * 4, 2.1),
    # main missing: level 1 aux only, stop
    (AUX, "", ("error",) * 4, 0.4),
])
def test_level_reward_two_agents(aux, main, statuses, expected):
    analysis = analyze_candidate((aux, main), "f")
    calls = 1 if "aux(" in main and aux else 0  # what the sandbox would have counted
    out = level_reward(analysis, result(*statuses, helper_calls=calls), CodeRewardConfig())
    assert out.reward == pytest.approx(expected)
    assert level_parts(out.components) == pytest.approx(out.components["raw"])
    assert out.components["raw"] == pytest.approx(expected)


@pytest.mark.parametrize("main", [MAIN_GOOD, MAIN_ALONE,
                                  "def f(xs):\n    if xs is None:\n        return sum(aux(xs))"
                                  "\n    return sum(x * x for x in xs)"])
def test_main_calls_aux_is_judged_from_what_ran(main):
    """No helper call while a passing test ran: no level-4 bonus, whatever the source
    says (a call in dead code earns nothing)."""
    analysis = analyze_candidate((AUX, main), "f")
    out = level_reward(analysis, result(*("passed",) * 4, helper_calls=0), CodeRewardConfig())
    assert out.components["level4_aux_called"] == 0.0
    assert out.components["level4_not_wrapper"] == 0.0 and out.reward == pytest.approx(2.5)


def test_level_reward_stops_at_a_syntax_error():
    analysis = analyze_candidate((AUX, "def f(xs):\n    return sum(aux(xs)\n"), "f")
    assert analysis.syntax_error is not None and analysis.main.ok is False
    out = level_reward(analysis, result("error"), CodeRewardConfig())
    assert out.reward == pytest.approx(0.4)  # main's def does not parse: no level 1 for it
    broken_aux = analyze_candidate(("def aux(xs):\n    return [x for x in xs", MAIN_GOOD), "f")
    out = level_reward(broken_aux, result("error"), CodeRewardConfig())
    assert out.components["level1_main_defined"] == 0.6
    assert out.components["level2_syntax"] == 0.0 and out.reward == pytest.approx(0.6)


def test_sandbox_syntax_error_also_stops_level_two():
    analysis = analyze_candidate((MAIN_ALONE,), "f")
    bad = ExecutionResult(tests=(TR("assert t", "error", "SyntaxError"),),
                          syntax_error=SyntaxErrorInfo(1, 1, "bad"))
    assert level_reward(analysis, bad, CodeRewardConfig()).reward == pytest.approx(0.6)
    assert pass_rate_reward(analysis, bad, CodeRewardConfig()).reward == 0.0


def test_single_agent_level_reward_and_components():
    analysis = analyze_candidate((MAIN_ALONE,), "f")
    out = level_reward(analysis, result("passed", "failed", "passed", "passed"), CodeRewardConfig())
    assert out.reward == pytest.approx(0.6 + 0.5 + 0.75)
    assert set(out.components) == {"level1_main_defined", "level2_syntax", "level3_tests",
                                   "pass_rate", "raw", "shift"}
    assert out.components["pass_rate"] == 0.75


def test_shift_and_max_reward():
    config = CodeRewardConfig(shift=1.0)
    assert max_reward("level", 2, config) == pytest.approx(3.0)
    assert max_reward("level", 1, config) == pytest.approx(1.1)
    assert max_reward("pass_rate", 1, config) == 0.0
    analysis = analyze_candidate((AUX, MAIN_GOOD), "f")
    out = level_reward(analysis, result("passed"), config)
    assert out.reward == pytest.approx(3.0) and out.components["raw"] == pytest.approx(4.0)
    assert out.reward == pytest.approx(max_reward("level", 2, config))
    custom = CodeRewardConfig(aux_defined=0, main_defined=1, syntax=1, tests=2, aux_called=0,
                              not_wrapper=0)
    assert custom.level_max(2) == 4.0
    with pytest.raises(KeyError, match="must be one of"):
        max_reward("nope", 1, config)


def test_pass_rate_reward():
    analysis = analyze_candidate((MAIN_ALONE,), "f")
    out = pass_rate_reward(analysis, result("passed", "timeout", "passed"),
                           CodeRewardConfig(shift=0.5))
    assert out.reward == pytest.approx(2 / 3 - 0.5)
    assert out.components == {"pass_rate": pytest.approx(2 / 3), "raw": pytest.approx(2 / 3),
                              "shift": 0.5}
    assert pass_rate_reward(analysis, ExecutionResult(tests=()), CodeRewardConfig()).reward == 0.0


def test_registry_and_config_validation():
    assert CODE_REWARDS.names() == ("level", "pass_rate")
    assert CODE_REWARDS.get("level").fn is level_reward
    with pytest.raises(ValueError, match=">= 0"):
        CodeRewardConfig(syntax=-1)
    with pytest.raises(TypeError):
        CodeRewardConfig(tests="1")  # type: ignore[arg-type]
