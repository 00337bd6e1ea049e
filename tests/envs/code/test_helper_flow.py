"""The helper's value must reach main's answer as the code runs: flow-sensitive data
flow over every place in main's code that can call aux (helper_flow.py,
dataflow.py), and a hard work budget on the analysis."""

import pytest

from mtrl.envs.code.analysis import (ANALYSIS_BUDGET, BUDGET_EXCEEDED, analyze_candidate,
                                     helper_usage)
from mtrl.envs.code.extraction import extract_code
from mtrl.envs.code.rewards import CodeRewardConfig, level_reward
from mtrl.envs.sandbox.types import ExecutionResult
from mtrl.envs.sandbox.types import TestResult as TR

# Each of these calls aux while the tests run and answers 2x + 1 without using
# aux's value (aux(x) = 2x): no reference may count as used.
UNUSED = {
    "dead_store": "def f(x):\n    y = aux(x)\n    y = 2 * x + 1\n    return y",
    "dead_branch": "def f(x):\n    y = aux(x)\n    if x == 12345:\n        return y + 1\n"
                   "    return 2 * x + 1",
    "killed_on_the_taken_branch": "def f(x):\n    y = aux(x)\n    if x == 12345:\n"
                                  "        pass\n    else:\n        y = 2 * x + 1\n    return y",
    "raise_guard": "def f(x):\n    if aux(x) is None:\n        raise ValueError\n"
                   "    return 2 * x + 1",
    "spin_on_aux": "def f(x):\n    while aux(0) is None:\n        pass\n    return 2 * x + 1",
    "overwritten_in_loop": "def f(x):\n    for _ in range(2):\n        y = aux(x)\n"
                           "    y = 2 * x + 1\n    return y",
    "finally_answers_instead": "def f(x):\n    try:\n        return aux(x) + 1\n"
                               "    finally:\n        return 2 * x + 1",
}
# A used call in a branch no test takes, beside a call made elsewhere that runs.
ELSEWHERE = {
    "other_function": ("def g():\n    return aux(0)\n\n\ndef f(x):\n    g()\n"
                       "    if x == 12345:\n        return aux(x) + 1\n    return 2 * x + 1", 6),
    "module_level": ("X = aux(0)\n\n\ndef f(x):\n    if x == 12345:\n"
                     "        return aux(x) + 1\n    return 2 * x + 1", 1),
    "default_argument": ("def f(x, _=aux(0)):\n    if x == 12345:\n"
                         "        return aux(x) + 1\n    return 2 * x + 1", 1),
    "lambda_dropped": ("def f(x):\n    (lambda: aux(0))()\n    if x == 12345:\n"
                       "        return aux(x) + 1\n    return 2 * x + 1", 2),
    # The function itself escapes into a name: its calls cannot be followed.
    "alias": ("def f(x):\n    g = aux\n    g(0)\n    return 2 * x + 1 if g else 0", 2),
    "method": ("class A:\n    def m(self):\n        return aux(0)\n\n\n"
               "def f(x):\n    A().m()\n    if x == 12345:\n        return aux(x) + 1\n"
               "    return 2 * x + 1", 2),
}
# Honest two-agent mains whose answer is computed from aux's value.
HONEST = {
    "adds": "def f(x):\n    return aux(x) + 1",
    "stores_then_uses": "def f(x):\n    y = aux(x)\n    return y * 2",
    "helper_function": "def g(v):\n    return aux(v) + 1\n\n\ndef f(x):\n    return g(x) * 2",
    "nested_function": "def f(x):\n    def g(v):\n        return aux(v) * 2\n    return g(x) + 1",
    "closure": "def f(x):\n    y = aux(x)\n    def g():\n        return y + 1\n    return g()",
    "loop_sum": "def f(xs):\n    total = 0\n    for x in xs:\n        total += aux(x)\n"
                "    return total",
    "loop_predicate": "def f(xs):\n    count = 0\n    for x in xs:\n        if aux(x):\n"
                      "            count += 1\n    return count",
    "predicate": "def f(x):\n    if aux(x) > 0:\n        return 1\n    return 0",
    "running_max": "def f(xs):\n    best = None\n    for x in xs:\n        v = aux(x)\n"
                   "        if best is None or v > best:\n            best = v\n    return best",
    "search_with_break": "def f(xs):\n    for v in xs:\n        if aux(v):\n            found = v\n"
                         "            break\n    else:\n        return -1\n    return found",
    "lambda": "def f(xs):\n    return sum(map(lambda v: aux(v) + 1, xs))",
    "map": "def f(xs):\n    return sum(map(aux, xs))",
    "key": "def f(xs):\n    return sorted(xs, key=aux)",
    "comprehension": "def f(x):\n    y = [aux(v) for v in x]\n    return sum(y)",
    "append": "def f(xs):\n    out = []\n    for x in xs:\n        out.append(aux(x))\n    return out",
    "recursion": "def f(n):\n    if n == 0:\n        return aux(0)\n    return f(n - 1) + 1",
    "guard_before_the_call": "def f(x):\n    if x < 0:\n        return 0\n    return aux(x) + 1",
    "try": "def f(x):\n    try:\n        return aux(x) + 1\n    except Exception:\n"
           "        return 2 * x + 1",
    "finally": "def f(x):\n    try:\n        y = aux(x)\n    finally:\n        pass\n"
               "    return y + 1",
    "while": "def f(n):\n    i = 0\n    while aux(i) < n:\n        i += 1\n    return i",
    "memo": "def f(x):\n    memo = {}\n    memo[x] = aux(x)\n    return memo[x] + 1",
    "walrus": "def f(x):\n    if (y := aux(x)) > 0:\n        return y + 1\n    return 0",
    "match": "def f(x):\n    match aux(x):\n        case 0:\n            return 1\n"
             "        case _:\n            return 2",
}


@pytest.mark.parametrize("name", list(UNUSED))
def test_a_value_that_cannot_reach_the_answer_is_not_used(name):
    usage = helper_usage(UNUSED[name], "f")
    assert usage.calls_aux and not usage.reaches_return and not usage.uses_result
    assert usage.ignored_calls == ((3,) if name in ("overwritten_in_loop", "finally_answers_instead")
                                   else (2,))


@pytest.mark.parametrize("name", list(ELSEWHERE))
def test_a_call_made_outside_the_answer_is_ignored(name):
    code, line = ELSEWHERE[name]
    usage = helper_usage(code, "f")
    assert usage.calls_aux and line in usage.ignored_calls and not usage.uses_result


@pytest.mark.parametrize("name", list(HONEST))
def test_honest_use_keeps_counting(name):
    usage = helper_usage(HONEST[name], "f")
    assert usage.uses_result and usage.ignored_calls == () and usage.rebound == "", usage


def passing(helper_calls: int = 1, derived: int = 1) -> ExecutionResult:
    """Two passing tests in which aux returned and main's answers were its own."""
    return ExecutionResult(tests=tuple(
        TR(f"assert t{i}", "passed", helper_calls=helper_calls, derived_answers=derived)
        for i in range(2)))


@pytest.mark.parametrize("main", [*UNUSED.values(), *(code for code, _ in ELSEWHERE.values())])
def test_unused_calls_earn_no_more_than_the_plain_program(main):
    """The level reward paid 4.0 for the dead store and the dead-branch side call; the plain
    program (no aux) earns 2.5, and so do they now."""
    analysis = analyze_candidate(("def aux(x):\n    return 2 * x", main), "f")
    out = level_reward(analysis, passing(), CodeRewardConfig())
    assert out.components["level4_not_wrapper"] == 0.0
    assert out.reward == pytest.approx(2.5), out.components


@pytest.mark.parametrize("name", list(HONEST))
def test_honest_mains_keep_the_full_level_reward(name):
    analysis = analyze_candidate(("def aux(x):\n    return 2 * x", HONEST[name]), "f")
    out = level_reward(analysis, passing(), CodeRewardConfig())
    assert out.reward == pytest.approx(4.0), out.components


# -- the work budget ------------------------------------------------------------------
CAP = 64_000


def largest(make) -> str:
    """make(n) for the largest n whose program fits the completion cap."""
    low, high = 1, 2
    while len(make(high)) <= CAP - 20:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if len(make(middle)) <= CAP - 20 else (low, middle)
    return make(low)


def backward_chain(n: int) -> str:
    """Each pass over the loop carries aux's value one name further: a fixed point
    that needs n passes of n statements (the cubic case, as one loop)."""
    body = [f"        v{i} = v{i - 1}" for i in range(n, 0, -1)]
    calls = [f"        v0 = aux({j})" for j in range(n // 2)]
    return "\n".join(["def f(x):", "    for _ in x:", *body, *calls, f"    return v{n}"])


def nested_loops(n: int) -> str:
    """aux called in the innermost of 90 nested loops: each loop iterates twice."""
    head = ["def f(x):", "    v0 = 0"] + ["    " * (d + 1) + f"for i{d} in x:" for d in range(90)]
    inner = "    " * 91
    body = [inner + "v0 = aux(v0)"] + [inner + f"v{i + 1} = v{i}" for i in range(n)]
    return "\n".join([*head, *body, f"    return v{n}"])


def honest_program(n: int) -> str:
    """n small helpers that each use aux, summed by main."""
    helpers = [f"def h{i}(xs):\n    total = 0\n    for x in xs:\n        if aux(x) > {i}:\n"
               f"            total += aux(x) * {i}\n    return total" for i in range(n)]
    main = "def f(xs):\n    return " + " + ".join(f"h{i}(xs)" for i in range(n))
    return "\n\n".join([*helpers, main])


@pytest.mark.parametrize("make", [backward_chain, nested_loops])
def test_a_costly_completion_stops_at_the_budget_with_no_level_four(make):
    completion = "```python\n" + largest(make) + "\n```"
    assert CAP - 1_000 < len(completion) <= CAP
    code = extract_code(completion, "f")
    usage = helper_usage(code, "f")
    assert usage.rebound == BUDGET_EXCEEDED and not usage.uses_result
    assert ANALYSIS_BUDGET < usage.work <= ANALYSIS_BUDGET + 2_000  # stopped, not finished
    analysis = analyze_candidate(("def aux(x):\n    return x", code), "f")
    out = level_reward(analysis, passing(), CodeRewardConfig())
    assert all(out.components[part] == 0.0 for part in
               ("level4_aux_called", "level4_not_wrapper", "level4_ignored_result"))


def test_an_honest_program_at_the_cap_fits_the_budget_and_work_is_linear():
    code = largest(honest_program)
    usage = helper_usage(code, "f")
    assert usage.uses_result and usage.rebound == ""
    assert usage.work < ANALYSIS_BUDGET // 2
    # Work grows linearly with the program: twice the helpers, about twice the work.
    small, double = helper_usage(honest_program(50), "f"), helper_usage(honest_program(100), "f")
    assert 1.9 < double.work / small.work < 2.1


def test_the_budget_is_honoured_exactly():
    code = HONEST["running_max"]
    needed = helper_usage(code, "f").work
    assert helper_usage(code, "f", budget_units=needed).uses_result
    starved = helper_usage(code, "f", budget_units=needed - 1)
    assert starved.rebound == BUDGET_EXCEEDED and not starved.uses_result
