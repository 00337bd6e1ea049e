"""The expert interface behind the `expert_edits` feedback mode.

An expert looks at a task, the program the agents produced and diagnostics, and
proposes edits as free text. The environment calls `suggest_batch` once per step
for every branch; implementations batch or parallelise as they can. An expert never
raises on a bad answer from its backend: it returns "" (no suggestion).
"""

from __future__ import annotations

import abc
from typing import NamedTuple, Sequence

from mtrl.envs.code.task import CodeTask
from mtrl.envs.sandbox.visible_text import visible

EXPERT_SYSTEM_PROMPT = (
    "You are an expert Python programmer reviewing a candidate solution to a programming "
    "task. Propose concise, concrete edits that would make it correct. If it is already "
    "correct, answer exactly: No edits needed.")


class ExpertRequest(NamedTuple):
    task: CodeTask
    program_code: str  # the joint program (helper and entry point) as it was run
    feedback_text: str  # diagnostics the expert may use (see feedback.expert_diagnostics)
    all_passed: bool | None = None  # the sandbox's verdict, when known


def build_expert_prompt(task: CodeTask, program_code: str, feedback_text: str) -> str:
    """The user message sent to a model expert; the candidate's program with its
    invisible and reordering characters written out (visible_text), so the expert
    reads the program that ran."""
    program = visible(program_code).strip() or "(the agents produced no code)"
    parts = [f"Task:\n{task.prompt.strip()}",
             f"The tests call the function `{task.entry_point}`.",
             f"Candidate program:\n```python\n{program}\n```"]
    if feedback_text.strip():
        parts.append(f"Diagnostics:\n{feedback_text.strip()}")
    parts.append("Reply with the edits only: which lines to change and how, at most a few "
                 "short items. Do not write tests.")
    return "\n\n".join(parts)


class Expert(abc.ABC):
    """Proposes edits to a candidate program."""

    @abc.abstractmethod
    def suggest(self, task: CodeTask, program_code: str, feedback_text: str, *,
                all_passed: bool | None = None) -> str:
        """Edit suggestion for one program; "" when there is none."""

    def suggest_batch(self, requests: Sequence[ExpertRequest]) -> list[str]:
        """One suggestion per request, in order."""
        return [self.suggest(r.task, r.program_code, r.feedback_text, all_passed=r.all_passed)
                for r in requests]

    def close(self) -> None:
        """Releases connections or files held by the expert."""
