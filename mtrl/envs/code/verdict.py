"""What the environment concluded about one joint action: the static analysis, what
the sandbox observed for ALL tests, and the reward with its components."""

from __future__ import annotations

import dataclasses
from typing import Mapping

from mtrl.envs.code.analysis import CandidateAnalysis
from mtrl.envs.sandbox.types import ExecutionResult, TestResult


@dataclasses.dataclass(frozen=True)
class Verdict:
    analysis: CandidateAnalysis
    result: ExecutionResult  # every test of the task, in task order (env.task_program)
    reward: float
    components: Mapping[str, float]
    tests_run: bool  # False when the program was not sent to the sandbox (see not_run_result)
    full_check: bool = False  # the last test is the task's full test code (env.task_program)

    @property
    def feedback_tests(self) -> tuple[TestResult, ...]:
        """The tests feedback may show: the task's own tests, without the full test
        code run after them (its source is the hidden test suite itself)."""
        return self.result.tests[:-1] if self.full_check else self.result.tests

    @property
    def all_passed(self) -> bool:
        return self.tests_run and self.result.passed


def not_run_result(tests: tuple[str, ...], analysis: CandidateAnalysis) -> ExecutionResult:
    """The verdict for a program that is not worth running: it does not compile, or no
    agent wrote any code. Every test is an error, so nothing can count as a pass."""
    if analysis.syntax_error is not None:
        info = analysis.syntax_error.info
        error_type, message = "SyntaxError", f"line {info.line}: {info.message}"
        syntax_error = info
    else:
        error_type, message, syntax_error = "NoCode", "no code was found in the response", None
    return ExecutionResult(
        tests=tuple(TestResult(source=test, status="error", error_type=error_type,
                               message=message) for test in tests),
        syntax_error=syntax_error)
