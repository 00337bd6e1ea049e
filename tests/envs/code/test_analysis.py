import pytest

from mtrl.envs.code.analysis import (analyze_candidate, check_function, function_source,
                                     helper_usage, remove_top_level_functions,
                                     role_function_names, syntax_error_of)


def test_check_function_requires_a_top_level_def_with_a_value_return():
    assert check_function("def f(x):\n    return x", "f").ok
    no_return = check_function("def f(x):\n    print(x)\n    return", "f")
    assert no_return.defined and not no_return.returns_value and not no_return.ok
    # A return inside a nested function does not count for the outer one.
    nested = check_function("def f(x):\n    def g():\n        return 1\n    g()", "f")
    assert nested.defined and not nested.returns_value
    # A method or nested function of the same name is not the top-level function.
    assert not check_function("class A:\n    def f(self):\n        return 1", "f").defined
    # "return" in a comment or string fools regexes, not ast.
    assert not check_function("def f():\n    s = 'return 1'  # return 2\n    pass", "f").ok
    assert not check_function("def f(:\n    return 1", "f").defined


def test_syntax_error_has_line_and_column():
    info = syntax_error_of("def f(x):\n    return x +\n")
    assert (info.line, info.column) == (2, 15)
    assert "invalid syntax" in info.message
    # compile() rejects what ast.parse accepts.
    assert syntax_error_of("return 1").message == "'return' outside function"
    assert syntax_error_of("def f():\n    return 1\n") is None
    assert syntax_error_of("x = " + "-" * 60_000 + "1").line == 1  # parser gives up: no crash


@pytest.mark.parametrize("body, calls, ignored, wrapper", [
    ("    return aux(x)", True, (), True),
    # Data flow: main adds to aux's value, so it is not a pass-through
    # (CoMLRL's shape rule called any single return around aux a wrapper).
    ("    return aux(x) + 1", True, (), False),
    ("    y = 1\n    return aux(x)", True, (), True),  # a dead statement is no logic
    ("    _ = aux(x)\n    return x * 2", True, (2,), False),  # `_ =` still drops it
    ("    '''doc'''\n    r = aux(x)\n    return r", True, (), True),
    ("    r = aux(x)\n    return r + 1", True, (), False),
    ("    aux(x)\n    return x * 2", True, (2,), False),
    ("    y = [aux(v) for v in x]\n    return sum(y)", True, (), False),
    ("    return x * 2", False, (), False),
    ("    def aux(v):\n        return v\n    return x", False, (), False),  # nested: own scope
    ("    # aux(x)\n    return 'aux(x)'", False, (), False),
])
def test_helper_usage(body, calls, ignored, wrapper):
    usage = helper_usage(f"def main(x):\n{body}\n", "main")
    assert (usage.calls_aux, usage.ignored_calls, usage.thin_wrapper) == (calls, ignored, wrapper)
    assert usage.uses_result == (calls and not ignored)
    assert usage.rebound == ""


def test_each_agent_owns_its_function():
    aux_code = "def aux(x):\n    return x * 2\n\ndef main(x):\n    return 0"
    main_code = "def aux(x):\n    return -1\n\ndef main(x):\n    y = aux(x)\n    return y + 1"
    analysis = analyze_candidate((aux_code, main_code), "main")
    assert analysis.codes == ("def aux(x):\n    return x * 2",
                              "def main(x):\n    y = aux(x)\n    return y + 1")
    namespace: dict = {}
    exec(analysis.program, namespace)
    assert namespace["main"](3) == 7  # agent 1's aux, agent 2's main
    assert [f.ok for f in analysis.functions] == [True, True]
    assert analysis.helper.uses_result and not analysis.helper.thin_wrapper


def test_syntax_error_is_attributed_to_the_agent_with_its_own_line_numbers():
    analysis = analyze_candidate(("def aux(x):\n    return x", "def main(x):\n    return (x"),
                                 "main")
    assert analysis.syntax_error.agent == 1
    assert analysis.syntax_error.info.line == 2
    single = analyze_candidate(("def main(x) return x",), "main")
    assert single.syntax_error.agent == 0 and single.helper is None
    assert not single.main.defined


def test_function_source_and_removal():
    code = "import os\n\n@staticmethod\ndef f():\n    return 1\n\ndef g():\n    return 2"
    assert function_source(code, "f") == "@staticmethod\ndef f():\n    return 1"
    assert function_source(code, "h") is None
    assert remove_top_level_functions(code, {"f"}) == "import os\n\n\ndef g():\n    return 2"
    assert remove_top_level_functions("def f(:", {"f"}) == "def f(:"


def test_role_names():
    assert role_function_names(1, "aux") == ("aux",)
    assert role_function_names(2, "main") == ("aux", "main")
    with pytest.raises(ValueError, match="1 or 2 agents"):
        role_function_names(3, "main")
    with pytest.raises(ValueError, match="may not be named"):
        role_function_names(2, "aux")
