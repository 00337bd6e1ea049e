"""Static calls: only calls a test is certain to make, with literal arguments, in order."""

import builtins

from mtrl.envs.sandbox.prefetch import static_calls

BUILTINS = set(dir(builtins))


def test_assert_calls_in_evaluation_order():
    source = "assert f(1) == g(2, k='x')\nassert f([1, 2]) == (3, 4)"
    assert static_calls(source, BUILTINS, None) == [
        ("f", (1,), {}), ("g", (2,), {"k": "x"}), ("f", ([1, 2],), {})]


def test_branches_loops_and_non_literals_are_skipped():
    source = ("assert f(1) or g(2)\n"
              "assert (h(1) if c else h(2))\n"
              "x = 3\n"
              "assert f(x) == 1\n"
              "assert [f(i) for i in range(3)]\n"
              "for i in range(2):\n"
              "    assert f(9)\n"
              "assert f(10)\n")
    # f(1) first operand of `or`; nothing after the loop (straight-line prefix only).
    assert static_calls(source, BUILTINS, None) == [("f", (1,), {})]


def test_known_and_test_defined_names_are_not_candidate_calls():
    source = "def helper(x):\n    return x\nassert helper(f(1)) == sorted([2, 1])"
    assert static_calls(source, BUILTINS, None) == [("f", (1,), {})]


def test_check_parameter_maps_to_the_entry_point():
    source = ("def check(candidate):\n"
              "    assert candidate([1, 2], 3) == True\n"
              "    assert candidate([], 1) == False\n"
              "    assert abs(candidate([0.5], 1.0) - 1) < 1e-6\n")
    assert static_calls(source, BUILTINS, "has_close") == [
        ("has_close", ([1, 2], 3), {}), ("has_close", ([], 1), {}),
        ("has_close", ([0.5], 1.0), {})]


def test_unparsable_tests_have_no_static_calls():
    assert static_calls("assert f(1) ==", BUILTINS, None) == []
