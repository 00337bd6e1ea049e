"""The task record shared by every code data set and code environment."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class CodeTask:
    """One programming task.

    task_id: stable identifier ("HumanEval/0", "mbpp/601").
    prompt: what the agent is shown (description and/or signature). Never contains
      the hidden tests: they reach the agent only through the feedback mode.
    entry_point: the function the tests call.
    tests: individual assert statements calling `entry_point` (MBPP's test_list;
      HumanEval's `check` split into its asserts, `candidate` renamed). These drive
      per-test feedback and the pass-rate reward.
    setup: trusted code run before the candidate and, in the sandbox's judge, before
      the tests, whose names a candidate cannot replace (imports, MBPP
      test_setup_code, HumanEval's prompt helpers such as `poly`).
    canonical_solution: a complete reference program, when the data set has one.
    test_code: the data set's original test code when it is not a list of asserts
      (HumanEval's `def check(candidate): ...`); used for exact benchmark verdicts,
      and by CodeEnv's reward after the asserts (env.task_program).
    """

    task_id: str
    prompt: str
    entry_point: str
    tests: tuple[str, ...]
    setup: str = ""
    canonical_solution: str | None = None
    test_code: str | None = None

    def __post_init__(self):
        if not self.task_id:
            raise ValueError("CodeTask.task_id must be non-empty")
        if not self.entry_point.isidentifier():
            raise ValueError(f"CodeTask.entry_point must be an identifier, got {self.entry_point!r}")
        if not isinstance(self.tests, tuple):
            raise TypeError("CodeTask.tests must be a tuple of assert strings")
        if not self.tests and self.test_code is None:
            raise ValueError(f"CodeTask {self.task_id} has neither tests nor test_code")
