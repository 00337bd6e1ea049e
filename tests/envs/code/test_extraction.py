import ast

import pytest

from mtrl.envs.code.extraction import decode_completion, defines_function, extract_code


def test_fenced_block_is_preferred_and_usage_is_stripped():
    completion = (
        "Here is my solution:\n"
        "```python\n"
        "import math\n"
        "\n"
        "def area(r):\n"
        "    # circle area\n"
        "    return math.pi * r ** 2\n"
        "\n"
        "print(area(2))\n"
        "assert area(0) == 0\n"
        "result = area(3)\n"
        "if __name__ == \"__main__\":\n"
        "    print(area(1))\n"
        "```\n"
        "It uses the formula pi r^2.")
    code = extract_code(completion, "area")
    assert code == "import math\n\ndef area(r):\n    # circle area\n    return math.pi * r ** 2"


def test_block_defining_the_wanted_function_wins():
    completion = ("```python\ndef helper(x):\n    return x\n```\n"
                  "```bash\npip install nothing\n```\n"
                  "```py\ndef solve(x):\n    return helper(x) + 1\n```\n")
    # The helper it calls, from its own block, comes along (it used to be dropped).
    assert extract_code(completion, "solve") == ("def helper(x):\n    return x\n\n"
                                                 "def solve(x):\n    return helper(x) + 1")
    assert extract_code(completion, "helper") == "def helper(x):\n    return x"
    # Without a wanted name, the first block with a definition.
    assert extract_code(completion) == "def helper(x):\n    return x"


def test_non_python_blocks_are_ignored():
    completion = "```text\ndef not_code(:\n```\nthen\ndef f():\n    return 2\n"
    assert extract_code(completion, "f") == "def f():\n    return 2"


def test_unterminated_fence_runs_to_the_end():
    completion = "```python\ndef f(x):\n    return 2 * x\n"
    assert extract_code(completion, "f") == "def f(x):\n    return 2 * x"


def test_constants_and_classes_are_kept_test_calls_are_not():
    completion = ("```python\nMOD = 10 ** 9 + 7\nclass Box:\n    pass\n"
                  "def f(n):\n    return n % MOD\nx = f(3)\nfor i in range(3):\n    f(i)\n```")
    assert extract_code(completion, "f") == (
        "MOD = 10 ** 9 + 7\n\nclass Box:\n    pass\n\ndef f(n):\n    return n % MOD")


def test_statements_sharing_a_line_are_separated():
    code = extract_code("```python\nimport os; print(os.sep)\ndef f():\n    return 1\n```", "f")
    assert code == "import os\n\ndef f():\n    return 1"


def test_bare_definition_with_prose_around_it():
    completion = ("Sure! The trick is to sum the squares.\n"
                  "def sum_squares(xs):\n"
                  "    return sum(x * x for x in xs)\n"
                  "This runs in linear time.\n"
                  "print(sum_squares([1, 2]))\n")
    assert extract_code(completion, "sum_squares") == (
        "def sum_squares(xs):\n    return sum(x * x for x in xs)")


def test_bare_code_with_decorator_and_two_functions_separated_by_prose():
    completion = ("import functools\n@functools.lru_cache(None)\ndef fib(n):\n"
                  "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
                  "Now the main function:\n"
                  "def main(n):\n    return fib(n) * 2\n<|im_end|>")
    code = extract_code(completion, "main")
    tree = ast.parse(code)
    assert [type(node).__name__ for node in tree.body] == ["Import", "FunctionDef", "FunctionDef"]
    assert "@functools.lru_cache(None)" in code and "<|im_end|>" not in code


def test_bare_flush_left_docstring_is_kept_with_its_function():
    completion = ('def f(x):\n    """Doubles.\nflush-left docstring line\n    """\n'
                  '    return 2 * x\nBye.')
    assert extract_code(completion, "f") == (
        'def f(x):\n    """Doubles.\nflush-left docstring line\n    """\n    return 2 * x')


def test_bare_trailing_indented_prose_is_trimmed():
    completion = "def f(x):\n    return x + 1\n    This adds one to the input value\n"
    assert extract_code(completion, "f") == "def f(x):\n    return x + 1"


def test_broken_code_is_returned_as_written_so_the_syntax_error_surfaces():
    broken = "def f(x):\n    y = x + 1\n    return y +"
    assert extract_code(f"```python\n{broken}\n```", "f") == broken
    assert extract_code(broken + "\n", "f") == broken


@pytest.mark.parametrize("completion", [
    "", "   \n\t", "I cannot solve this.", "```\nJust some words here\n```",
    "```python\nprint('hi')\n```", b"\xff\xfe\xfa", "\x00\x00\x00", "\ud800\udfff junk"])
def test_junk_and_empty_give_empty_string(completion):
    assert extract_code(completion, "f") == ""


def test_bytes_nul_and_surrogates_are_handled():
    raw = "def f():\n    return 'caf\u00e9'\n".encode() + b"\xff\n"
    assert extract_code(raw, "f") == "def f():\n    return 'caf\u00e9'"
    assert extract_code("def f():\x00\n    return '\ud800'\n", "f") == "def f():\n    return '?'"
    assert decode_completion(b"a\r\nb\rc\x00") == "a\nb\nc"


def test_enormous_and_pathological_inputs_are_bounded():
    huge = "def f():\n    return 1\n" + "x" * 5_000_000
    assert extract_code(huge, "f") == "def f():\n    return 1"
    assert len(decode_completion("y" * 200_000, max_chars=1000)) == 1000
    # Nesting that makes the parser give up (MemoryError / RecursionError) is not a crash.
    nested = "def f():\n    return " + "-" * 60_000 + "1\n"
    assert extract_code(nested, "f").startswith("def f():")
    assert extract_code("```python\n" + "(" * 500 + "\n```", "f") == ""


def test_defines_function_is_textual():
    assert defines_function("  async def go(x):", "go")
    assert not defines_function("def gone(x):", "go")


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="identifier"):
        extract_code("def f(): pass", "not a name")
    with pytest.raises(TypeError):
        extract_code(42, "f")  # type: ignore[arg-type]
