"""split_check_function: which asserts of `check(candidate)` are kept, and how."""

import ast

import pytest

from mtrl.data import CheckSplit, split_check_function


def test_keeps_top_level_asserts_and_renames_candidate_in_place():
    code = (
        "METADATA = {}\n"
        "\n"
        "def check(candidate):\n"
        "    assert candidate([1, 2]) == 3\n"
        "    assert candidate( [ 'candidate' ] )=='x' , 'candidate failed'\n"
        "    assert abs(candidate([0.5]) - 0.5) < 1e-6\n"
    )
    split = split_check_function(code, "total")
    # Formatting, string contents and the message survive; only the Name changes.
    assert split.tests == (
        "assert total([1, 2]) == 3",
        "assert total( [ 'candidate' ] )=='x' , 'candidate failed'",
        "assert abs(total([0.5]) - 0.5) < 1e-6",
    )
    assert split.dropped == () and split.trivial == ()


def test_multiline_assert_and_non_ascii_before_the_name():
    # col_offset is in UTF-8 bytes: a multi-byte character before `candidate` on the
    # same line would shift a character-based edit.
    code = (
        "def check(candidate):\n"
        "    assert ['é', candidate('ü')] == [\n"
        "        'é', candidate('ü')\n"
        "    ]\n"
    )
    (test,) = split_check_function(code, "f").tests
    assert test == "assert ['é', f('ü')] == [\n        'é', f('ü')\n    ]"
    assert "candidate" not in test
    exec(compile("def f(x):\n    return x\n" + test, "<test>", "exec"), {})


def test_drops_loops_locals_helpers_and_reports_trivial_asserts():
    code = (
        "import math\n"
        "def helper(x):\n"
        "    return x\n"
        "def check(candidate):\n"
        "    assert True, 'This prints if this assert fails'\n"
        "    assert candidate(1) == 1\n"
        "    for x in range(3):\n"
        "        assert candidate(x) == x\n"
        "    expected = 4\n"
        "    assert candidate(4) == expected\n"
        "    assert candidate(2) == helper(2)\n"
        "    assert math.isclose(candidate(2.0), 2.0)\n"
        "    print('done')\n"
    )
    split = split_check_function(code, "ident")
    assert split.tests == ("assert ident(1) == 1",)
    assert split.trivial == ("assert True, 'This prints if this assert fails'",)
    assert split.dropped == (
        "for x in range(3):\n        assert candidate(x) == x",
        "assert candidate(4) == expected",
        "assert candidate(2) == helper(2)",
        "assert math.isclose(candidate(2.0), 2.0)",
    )


def test_available_names_and_own_bindings_are_allowed():
    code = (
        "def check(candidate):\n"
        "    assert math.isclose(candidate(2.0), 2.0)\n"
        "    assert all(candidate(v) == v for v in range(3))\n"
        "    assert (lambda k: candidate(k))(5) == 5\n"
    )
    split = split_check_function(code, "g", available_names={"math"})
    assert split.tests == (
        "assert math.isclose(g(2.0), 2.0)",
        "assert all(g(v) == v for v in range(3))",
        "assert (lambda k: g(k))(5) == 5",
    )


def test_a_local_rebinding_shadows_a_builtin():
    code = (
        "def check(candidate):\n"
        "    len = 3\n"
        "    assert candidate(len) == 3\n"
        "    assert candidate(max(1, 2)) == 2\n"
    )
    split = split_check_function(code, "h")
    assert split.tests == ("assert h(max(1, 2)) == 2",)
    assert split.dropped == ("assert candidate(len) == 3",)


def test_entry_point_called_by_name_counts_as_calling_the_candidate():
    code = "def check(candidate):\n    assert sort_third([1]) == [1]\n"
    assert split_check_function(code, "sort_third").tests == ("assert sort_third([1]) == [1]",)


def test_parameter_name_need_not_be_candidate():
    code = "def check(fn):\n    assert fn(0) == 0\n"
    assert split_check_function(code, "zero").tests == ("assert zero(0) == 0",)


def test_every_kept_test_parses_to_the_ast_renamed_assert():
    code = (
        "def check(candidate):\n"
        "    assert candidate(x=1, **{'candidate': 2}) is None, f'{candidate}'\n"
    )
    (test,) = split_check_function(code, "k").tests
    expected = ast.parse("assert k(x=1, **{'candidate': 2}) is None, f'{k}'")
    assert ast.dump(ast.parse(test)) == ast.dump(expected)


@pytest.mark.parametrize("code, message", [
    ("def check(:\n", "does not parse"),
    ("def other(candidate):\n    assert candidate(1)\n", "no top-level function 'check'"),
    ("def check():\n    assert True\n", "first parameter"),
])
def test_invalid_test_code_raises(code, message):
    with pytest.raises(ValueError, match=message):
        split_check_function(code, "f")


def test_entry_point_must_be_an_identifier():
    with pytest.raises(ValueError, match="identifier"):
        split_check_function("def check(c):\n    assert c(1)\n", "not valid")


def test_checksplit_requires_tuples():
    with pytest.raises(TypeError):
        CheckSplit(tests=["assert f(1)"])
