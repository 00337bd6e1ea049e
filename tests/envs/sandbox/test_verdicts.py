"""Verdict semantics: every status kind, syntax errors, HumanEval format, edge cases."""

import pytest

from mtrl.envs.sandbox import Limits, Program

ADD = "def add(a, b):\n    return a + b\n"


def run(pool, code, tests, **kwargs):
    limits = kwargs.pop("limits", None)
    return pool.submit(Program(code=code, tests=tuple(tests), **kwargs), limits).result()


def statuses(result):
    return [(t.status, t.error_type) for t in result.tests]


def test_each_status_kind(pool):
    code = ADD + "def spin():\n    while True:\n        pass\n"
    result = run(pool, code, ["assert add(1, 2) == 3", "assert add(1, 1) == 3",
                              "assert add('a', 1) == 1", "assert spin() is None",
                              "assert add(2, 2) == 4"])
    assert statuses(result) == [("passed", ""), ("failed", "AssertionError"),
                                ("error", "TypeError"), ("timeout", "Timeout"), ("passed", "")]
    assert "concatenate" in result.tests[2].message
    assert result.num_passed == 2 and not result.passed and result.error == ""


def test_all_passing_program_passes(pool):
    result = run(pool, ADD, ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"])
    assert result.passed and result.pass_rate == 1.0 and result.syntax_error is None


def test_no_tests_is_not_a_pass(pool):
    result = run(pool, ADD, [])
    assert result.tests == () and not result.passed


@pytest.mark.parametrize("code", [
    "def f(x):\n    return (x +\n",
    "def f(x)\n    return x\n",
    "x = 1\n  y = 2\n",
    "def f():\n    return 'unterminated\n",
])
def test_syntax_error_line_and_column_match_python(pool, code):
    with pytest.raises(SyntaxError) as expected:
        compile(code, "<candidate>", "exec")
    result = run(pool, code, ["assert f(1) == 1"])
    assert result.syntax_error is not None
    assert (result.syntax_error.line, result.syntax_error.column) == (
        expected.value.lineno, expected.value.offset)
    assert result.syntax_error.message == expected.value.msg
    assert statuses(result) == [("error", "SyntaxError")]


def test_top_level_exception_fails_every_test(pool):
    result = run(pool, "raise ValueError('boom')\n" + ADD, ["assert add(1, 2) == 3"] * 2)
    assert statuses(result) == [("error", "ValueError")] * 2
    assert result.tests[0].message == "boom"


def test_assertion_message_is_reported(pool):
    result = run(pool, ADD, ["assert add(1, 1) == 3, 'one plus one'"])
    assert result.tests[0].status == "failed" and result.tests[0].message == "one plus one"


def test_humaneval_check_format(pool):
    test = ("METADATA = {}\n\n"
            "def check(candidate):\n"
            "    assert candidate(1, 2) == 3\n"
            "    assert abs(candidate(0.1, 0.2) - 0.3) < 1e-9\n"
            "    for i in range(20):\n"
            "        assert candidate(i, i) == 2 * i\n")
    good = run(pool, ADD, [test], entry_point="add")
    bad = run(pool, "def add(a, b):\n    return a - b\n", [test], entry_point="add")
    missing = run(pool, "def other(a, b):\n    return a + b\n", [test], entry_point="add")
    assert good.passed
    assert statuses(bad) == [("failed", "AssertionError")]
    assert statuses(missing) == [("error", "NameError")]


def test_setup_runs_in_both_and_cannot_be_shadowed(pool):
    setup = "import math\ndef reference(x):\n    return math.sqrt(x)\n"
    code = "def reference(x):\n    return 0\ndef root(x):\n    return math.sqrt(x)\n"
    result = run(pool, code, ["assert root(9) == reference(9) == 3.0"], setup=setup)
    assert result.passed  # the test's `reference` is setup's, not the candidate's


def test_candidate_cannot_shadow_builtins_used_by_tests(pool):
    code = ADD + "def all(xs):\n    return True\n"
    result = run(pool, code, ["assert all([add(1, 1) == 3])"])
    assert statuses(result) == [("failed", "AssertionError")]


def test_in_place_mutation_is_copied_back(pool):
    code = "def sort_in_place(xs):\n    xs.sort()\n"
    result = run(pool, code, ["xs = [3, 1, 2]\nsort_in_place(xs)\nassert xs == [1, 2, 3]"])
    assert result.passed


def test_generators_and_plain_globals_cross(pool):
    code = "TABLE = {1: 'a', (2, 3): [4]}\ndef gen(n):\n    yield from range(n)\n"
    result = run(pool, code, ["assert list(gen(3)) == [0, 1, 2]",
                              "assert TABLE[(2, 3)] == [4] and TABLE[1] == 'a'"])
    assert result.passed


def test_custom_exception_type_is_reported(pool):
    code = "class Oops(Exception):\n    pass\ndef f():\n    raise Oops('nope')\n"
    result = run(pool, code, ["assert f() == 1"])
    assert statuses(result) == [("error", "Oops")] and result.tests[0].message == "nope"


def test_expected_exception_can_be_tested(pool):
    code = "def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n"
    test = "try:\n    f(-1)\nexcept ValueError:\n    pass\nelse:\n    raise AssertionError('no error')"
    assert run(pool, code, [test]).passed


def test_non_plain_values_cross_as_opaque_and_arguments_must_be_plain(pool):
    # A re.Match crosses with its truth value (MBPP asserts those); an object
    # whose __eq__ always holds equals nothing in the judge.
    code = ("import re\ndef match(s):\n    return re.match('a+', s)\n"
            "class Eq:\n    def __eq__(self, other):\n        return True\n"
            "def eq():\n    return Eq()\ndef g(fn):\n    return 1\n")
    result = run(pool, code, ["assert match('aab')", "assert not match('b')",
                              "assert 'aa' in repr(match('aab'))", "assert eq() == eq()",
                              "assert g(lambda: 1) == 1"])
    assert statuses(result) == [("passed", ""), ("passed", ""), ("passed", ""),
                                ("failed", "AssertionError"), ("error", "TypeError")]


def test_candidate_names_may_shadow_builtins_when_declared(pool):
    code = "def sum(a, b):\n    return a + b\n"
    tests = ("assert sum(2, 3) == 5",)
    assert statuses(run(pool, code, tests)) == [("error", "TypeError")]  # the builtin sum
    assert run(pool, code, tests, candidate_names=("sum",)).passed


def test_stateful_candidate_sees_calls_in_test_order(pool):
    # Prefetched calls must not reorder a candidate's observable state.
    code = "count = 0\ndef tick():\n    global count\n    count += 1\n    return count\n"
    tests = ["assert tick() == 1", "assert tick() == 2", "assert [tick(), tick()] == [3, 4]"]
    assert run(pool, code, tests).passed


def test_tests_after_a_timeout_run_in_a_fresh_candidate(pool):
    code = ADD + "def spin():\n    while True:\n        pass\n"
    result = run(pool, code, ["assert spin()", "assert add(2, 3) == 5", "assert add(1, 1) == 2"])
    assert statuses(result) == [("timeout", "Timeout"), ("passed", ""), ("passed", "")]


def test_output_is_captured_and_capped(pool, fast_limits):
    code = "import sys\ndef f():\n    print('x' * 10000)\n    sys.stderr.write('err')\n    return 1\n"
    result = run(pool, code, ["assert f() == 1"])
    assert result.passed
    assert result.stdout == "x" * fast_limits.output_bytes and result.stderr == "err"


def test_program_wall_clock_limit(pool):
    limits = Limits(wall_s_per_test=1.0, wall_s_total=1.5, cpu_s=2.0, memory_bytes=512 << 20)
    code = "import time\ndef nap():\n    time.sleep(0.6)\n    return 1\n"
    result = run(pool, code, ["assert nap() == 1"] * 5, limits=limits)
    assert [t.status for t in result.tests[:2]] == ["passed", "passed"]
    assert result.tests[-1].status == "timeout" and "wall-clock" in result.error


def test_cpu_limit_ends_a_busy_candidate(pool):
    # Wall limits far above the CPU limit: on a loaded machine 1 s of CPU takes many
    # seconds of wall time, and the CPU limit must still be the one that ends it.
    limits = Limits(wall_s_per_test=30.0, wall_s_total=40.0, cpu_s=1.0,
                    memory_bytes=512 << 20)
    code = "def burn():\n    while True:\n        pass\n"
    result = run(pool, code, ["assert burn()"], limits=limits)
    assert statuses(result) == [("timeout", "CPUTimeLimitExceeded")]


def test_run_program_one_off():
    from mtrl.envs.sandbox import run_program
    result = run_program(Program(ADD, ("assert add(2, 2) == 4",)),
                         Limits(wall_s_per_test=2.0, wall_s_total=4.0))
    assert result.passed
