"""Reading one tool-integrated-reasoning turn: a final answer, a code call, or neither.

A completion is, in this order of precedence:
  answer  it holds `\\boxed{...}` (the final answer ends the episode); for a code
          task the submitted program is the turn's last complete ```python block,
          or, if the turn has none, the last code the tool ran on this branch;
  call    it holds a complete ```python ... ``` block: the last one is run;
  invalid a ```python fence that is never closed (a malformed call: nothing runs);
  void    none of these (SimpleTIR's void turn: neither code nor an answer).
"""

from __future__ import annotations

import dataclasses
import re

from mtrl.config.fields import check_choice
from mtrl.envs.math.answer import boxed_contents

_BLOCK = re.compile(r"```(?:python|py)[ \t]*\n(.*?)```", re.DOTALL)
_OPEN = re.compile(r"```(?:python|py)[ \t]*\n")

KINDS = ("answer", "call", "invalid", "void")


@dataclasses.dataclass(frozen=True)
class TurnAction:
    kind: str  # one of KINDS
    code: str = ""  # the call's code, or a code task's submitted program ("" : none)
    answer: str = ""  # the \boxed{} contents of an answer

    def __post_init__(self):
        check_choice("kind", self.kind, KINDS)


def code_blocks(text: str) -> list[str]:
    """The contents of every complete ```python block, in order."""
    return _BLOCK.findall(text)


def parse_turn(text: str) -> TurnAction:
    """The turn's action (module docstring)."""
    blocks = code_blocks(text)
    boxes = boxed_contents(text)
    if boxes:
        return TurnAction("answer", code=blocks[-1] if blocks else "", answer=boxes[-1])
    if blocks:
        return TurnAction("call", code=blocks[-1])
    if _OPEN.search(text):
        return TurnAction("invalid")
    return TurnAction("void")
