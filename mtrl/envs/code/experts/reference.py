"""An offline expert: edit suggestions derived from the task's canonical solution.

The candidate's entry-point function is compared line by line with the reference's
(`difflib.SequenceMatcher` over lines with trailing whitespace removed), and the
differing runs become "replace / delete / insert" items, at most `max_edits` of
them. A program the sandbox passed, or one equal to the reference, "looks correct".
Tasks without a canonical solution get no suggestion.

The expert reads only the solutions of the tasks it is given (`tasks`: a run's train
split, envs/code/builder.py). The environment serves training and evaluation alike, so
an expert that read any task's own solution would write it into validation and test
feedback: turn-2 held-out success, the checkpoint choice and the test number would
then measure copying. A task it was not given gets no suggestion.
"""

from __future__ import annotations

import difflib

from typing import Iterable

from mtrl.envs.code.analysis import function_source
from mtrl.envs.code.experts.base import Expert
from mtrl.envs.code.task import CodeTask

LOOKS_CORRECT = "The program looks correct; no edits needed."


class ReferenceExpert(Expert):
    """tasks: the tasks whose canonical solutions the expert may read (a run's train
    split); None: every task's own (unit tests and offline tools, never a run that
    evaluates with this expert)."""

    def __init__(self, max_edits: int = 3, max_lines_per_edit: int = 8,
                 tasks: Iterable[CodeTask] | None = None):
        if max_edits < 1 or max_lines_per_edit < 1:
            raise ValueError("ReferenceExpert needs max_edits >= 1 and max_lines_per_edit >= 1")
        self.max_edits = max_edits
        self.max_lines_per_edit = max_lines_per_edit
        # Whole tasks (frozen, hashable), not ids: an evaluation task that shares a
        # train task's id but not its text is still unknown.
        self.tasks = None if tasks is None else frozenset(tasks)

    def knows(self, task: CodeTask) -> bool:
        """Whether the expert may read `task`'s solution (and so review it at all)."""
        return self.tasks is None or task in self.tasks

    def suggest(self, task: CodeTask, program_code: str, feedback_text: str, *,
                all_passed: bool | None = None) -> str:
        del feedback_text  # the reference, not the diagnostics, drives the edits
        if not self.knows(task):  # an evaluation task: no review at all
            return ""
        if all_passed:
            return LOOKS_CORRECT
        solution = task.canonical_solution
        if not solution:
            return ""
        name = task.entry_point
        candidate = function_source(program_code, name) or program_code
        reference = function_source(solution, name) or solution
        old = [line.rstrip() for line in candidate.strip("\n").split("\n")]
        new = [line.rstrip() for line in reference.strip("\n").split("\n")]
        if not candidate.strip():
            return f"Write `{name}`; for example:\n" + self._block(new)
        edits = [op for op in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
                 if op[0] != "equal"]
        if not edits:
            return LOOKS_CORRECT
        items = [self._describe(op, old, new) for op in edits[: self.max_edits]]
        if len(edits) > self.max_edits:
            items.append(f"({len(edits) - self.max_edits} further edits omitted)")
        return f"Edits to `{name}` (line numbers within the function):\n" + "\n".join(items)

    def _describe(self, op: tuple[str, int, int, int, int], old: list[str],
                  new: list[str]) -> str:
        tag, i1, i2, j1, j2 = op
        where = f"line {i1 + 1}" if i2 - i1 == 1 else f"lines {i1 + 1}-{i2}"
        if tag == "replace":
            return (f"- Replace {where}:\n{self._block(old[i1:i2])}\n  with:\n"
                    f"{self._block(new[j1:j2])}")
        if tag == "delete":
            return f"- Delete {where}:\n{self._block(old[i1:i2])}"
        return f"- After line {i1} insert:\n{self._block(new[j1:j2])}"

    def _block(self, lines: list[str]) -> str:
        shown = lines[: self.max_lines_per_edit]
        text = "\n".join(f"    {line}" for line in shown)
        if len(lines) > len(shown):
            text += f"\n    ... ({len(lines) - len(shown)} more lines)"
        return text
