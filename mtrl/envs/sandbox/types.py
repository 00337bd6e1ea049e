"""Value types crossing the sandbox boundary: what to run, under which limits, and
what the harness observed. Everything here is plain, frozen and hashable so it can
key the result cache and travel between processes."""

from __future__ import annotations

import dataclasses
from typing import Literal

TestStatus = Literal["passed", "failed", "error", "timeout"]


@dataclasses.dataclass(frozen=True)
class Limits:
    """Resource limits for one program execution (all tests of one program)."""

    wall_s_per_test: float = 3.0  # wall clock for one test
    wall_s_total: float = 10.0  # wall clock for the whole program incl. its tests
    cpu_s: float = 10.0  # RLIMIT_CPU for the executing process
    memory_bytes: int = 1 << 30  # RLIMIT_AS
    # Extra processes the program may start (fork bombs). At 0 a seccomp filter refuses
    # every fork and 64 threads are allowed; above 0 threads count against it too.
    max_processes: int = 0
    file_size_bytes: int = 1 << 20  # RLIMIT_FSIZE
    output_bytes: int = 8192  # captured stdout / stderr kept, each

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value < 0 or (value == 0 and field.name != "max_processes"):
                raise ValueError(f"Limits.{field.name} must be positive, got {value}")


@dataclasses.dataclass(frozen=True)
class Program:
    """Untrusted code plus the tests that judge it.

    tests: assert statements, one per entry (`assert f(1) == 2`), or, when
      `entry_point` is set, HumanEval-style test code defining `check(candidate)`
      given as a single entry.
    setup: trusted imports / setup code run before the candidate code (MBPP's
      test_setup_code, HumanEval's prompt imports).
    candidate_names: names the tests must resolve to the candidate's definitions
      even where they shadow a builtin or a setup name (an MBPP function called
      `sum`). Otherwise builtins and setup names always win in the judge, so that
      `def all(x): return True` cannot rig `assert all(...)`. The entry point is
      always the candidate's.
    helper_code / helper_names: two-agent programs. The helper's code loads in a
      process of its own, forked before `code` loads; in `code`'s namespace each
      of helper_names is a proxy that calls it there (plain data both ways). So the
      helper's code can neither patch nor replace `code`'s functions (class 8,
      docs/sandbox.md): what the tests exercise is `code` as written, calling the helper.
    """

    code: str
    tests: tuple[str, ...]
    setup: str = ""
    entry_point: str | None = None
    candidate_names: tuple[str, ...] = ()
    helper_code: str = ""  # a second agent's code, run in a process of its own
    helper_names: tuple[str, ...] = ()  # its functions that `code` may call

    def __post_init__(self):
        if not all(isinstance(v, tuple) for v in (self.tests, self.candidate_names,
                                                   self.helper_names)):
            raise ValueError("Program.tests, candidate_names and helper_names must be tuples")


@dataclasses.dataclass(frozen=True)
class TestResult:
    source: str  # the test as given
    status: TestStatus
    error_type: str = ""  # e.g. "AssertionError", "ZeroDivisionError", "Timeout"
    message: str = ""  # capped
    # Two agents (relay.py), counted by the judge from what ran: main's calls of its
    # helper that returned a value while this test ran, and main's answers that
    # came after such a value and differ from every value the helper returned.
    helper_calls: int = 0
    derived_answers: int = 0


@dataclasses.dataclass(frozen=True)
class SyntaxErrorInfo:
    line: int
    column: int
    message: str


@dataclasses.dataclass(frozen=True)
class ExecutionResult:
    """What the harness observed for one program. A test counts as passed only if
    the harness saw it pass; anything else (crash, exit, kill) is not a pass."""

    tests: tuple[TestResult, ...]
    syntax_error: SyntaxErrorInfo | None = None
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0
    cached: bool = False
    error: str = ""  # sandbox-level failure (worker killed, program-level timeout...)
    isolation: str = ""  # IsolationReport.summary() of the slot that judged it

    @property
    def helper_calls(self) -> int:
        """Two agents: how often main's calls of its helper returned a value while
        the tests ran, as the judge relayed them (code that never ran, a call that
        raised and a helper that did not load count nothing)."""
        return sum(t.helper_calls for t in self.tests)

    @property
    def num_passed(self) -> int:
        return sum(t.status == "passed" for t in self.tests)

    @property
    def pass_rate(self) -> float:
        return self.num_passed / len(self.tests) if self.tests else 0.0

    @property
    def passed(self) -> bool:
        """True only when there is at least one test and every test passed."""
        return bool(self.tests) and self.syntax_error is None and all(
            t.status == "passed" for t in self.tests)
