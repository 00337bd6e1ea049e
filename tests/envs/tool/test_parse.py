"""Reading a tool turn: answer, call, invalid (unclosed fence) or void."""

import pytest

from mtrl.envs.tool import parse_turn


@pytest.mark.parametrize("text, kind, code, answer", [
    ("```python\nprint(1)\n```", "call", "print(1)\n", ""),
    ("a\n```python\nx=1\n```\nthen\n```py\nprint(2)\n```", "call", "print(2)\n", ""),
    ("so \\boxed{42}", "answer", "", "42"),
    ("```python\ndef f(): return 1\n```\n\\boxed{submit}", "answer", "def f(): return 1\n",
     "submit"),
    ("```python\nprint(1)", "invalid", "", ""),
    ("just thinking", "void", "", ""),
    ("", "void", "", ""),
    ("```\nprint(1)\n```", "void", "", ""),  # not a python block
])
def test_parse_turn(text, kind, code, answer):
    action = parse_turn(text)
    assert (action.kind, action.code, action.answer) == (kind, code, answer)
