"""A math word problem with a numeric answer: the task type the math and tool
environments play (GSM8K's reader, mtrl/data/gsm8k.py, builds them)."""

from __future__ import annotations

import dataclasses
import re

_NUMBER = re.compile(r"-?\d+(\.\d+)?")


@dataclasses.dataclass(frozen=True)
class MathTask:
    """One word problem with a numeric final answer.

    task_id: "gsm8k/<split>/<line index>".
    question: the problem text shown to the agent.
    answer: the final number as text, thousands separators removed ("1080").
    solution: the worked solution, without the final `#### ...` line.
    """

    task_id: str
    question: str
    answer: str
    solution: str = ""

    def __post_init__(self):
        if not self.task_id:
            raise ValueError("MathTask.task_id must be non-empty")
        if not _NUMBER.fullmatch(self.answer):
            raise ValueError(f"MathTask.answer must be a plain number, got {self.answer!r}")

    @property
    def prompt(self) -> str:
        """The question (the name transcripts show a task's prompt under)."""
        return self.question

    @property
    def answer_value(self) -> float:
        return float(self.answer)
