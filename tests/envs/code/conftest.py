"""Fixtures for the code-environment tests: hand-made tasks and a small executor.

`SubprocessExecutor` is a second, independent way to run a Program (one fresh
interpreter per program, no sandboxing), so environment tests do not depend on the
sandbox's internals; the end-to-end test uses the real SandboxPool.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mtrl.envs.code.task import CodeTask
from mtrl.envs.sandbox.types import ExecutionResult, Program
from mtrl.envs.sandbox.types import TestResult as TR

_HARNESS = r"""
import json, sys
request = json.loads(sys.stdin.read())
namespace = {}
results = []
calls = [0]


def counted(fn):  # main's calls of its helper, counted per test as the sandbox does
    def call(*args, **kwargs):
        calls[0] += 1
        return fn(*args, **kwargs)
    return call


try:
    exec(request["setup"], namespace)
    helper = {}
    exec(request["helper_code"], helper)
    for name in request["helper_names"]:
        if name in helper:
            namespace[name] = counted(helper[name])
    exec(request["code"], namespace)
    loaded = None
except BaseException as error:
    loaded = error
for test in request["tests"]:
    if loaded is not None:
        results.append(["error", type(loaded).__name__, str(loaded), 0])
        continue
    calls[0] = 0
    try:
        exec(test, namespace)
        results.append(["passed", "", "", calls[0]])
    except AssertionError as error:
        results.append(["failed", "AssertionError", str(error), calls[0]])
    except BaseException as error:
        results.append(["error", type(error).__name__, str(error), calls[0]])
sys.stdout.write("\n@@RESULTS@@" + json.dumps(results))
"""


class SubprocessExecutor:
    """run_batch over fresh interpreters; records every call for batching asserts."""

    def __init__(self, timeout_s: float = 10.0):
        self.timeout_s = timeout_s
        self.calls: list[list[Program]] = []

    def run_batch(self, programs: list[Program]) -> list[ExecutionResult]:
        self.calls.append(list(programs))
        return [self._run(program) for program in programs]

    def _run(self, program: Program) -> ExecutionResult:
        # A two-agent program's helper runs in a namespace of its own; main sees
        # counting proxies of its functions (no process split).
        request = json.dumps({"setup": program.setup, "code": program.code,
                              "helper_code": program.helper_code,
                              "helper_names": list(program.helper_names),
                              "tests": list(program.tests)})
        try:
            done = subprocess.run([sys.executable, "-I", "-c", _HARNESS], input=request,
                                  capture_output=True, text=True, timeout=self.timeout_s)
            rows = json.loads(done.stdout.rsplit("@@RESULTS@@", 1)[1])
        except (subprocess.TimeoutExpired, IndexError, ValueError) as error:
            return ExecutionResult(
                tests=tuple(TR(t, "timeout", "Timeout", "") for t in program.tests),
                error=type(error).__name__)
        return ExecutionResult(tests=tuple(TR(source, status, kind, message, calls)
                                           for source, (status, kind, message, calls)
                                           in zip(program.tests, rows)))


ADD = CodeTask(
    task_id="hand/add", prompt="Return the sum of a and b.\n\ndef add(a, b):",
    entry_point="add",
    tests=("assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(10, 5) == 15"),
    canonical_solution="def add(a, b):\n    return a + b\n")
SQUARES = CodeTask(
    task_id="hand/sum_squares", prompt="Return the sum of the squares of xs.",
    entry_point="sum_squares",
    tests=("assert sum_squares([1, 2]) == 5", "assert sum_squares([]) == 0",
           "assert sum_squares([3]) == 9"),
    canonical_solution="def sum_squares(xs):\n    return sum(x * x for x in xs)\n")
MAX_GAP = CodeTask(
    task_id="hand/max_gap", prompt="Return the largest difference between adjacent items.",
    entry_point="max_gap", setup="import math",
    tests=("assert max_gap([1, 4, 2]) == 3", "assert max_gap([5, 5]) == 0",
           "assert max_gap([0, 10, 11]) == 10"),
    canonical_solution=("def max_gap(xs):\n    return max(abs(a - b) for a, b in "
                        "zip(xs, xs[1:]))\n"))


@pytest.fixture
def executor() -> SubprocessExecutor:
    return SubprocessExecutor()


@pytest.fixture
def tasks() -> tuple[CodeTask, CodeTask, CodeTask]:
    return ADD, SQUARES, MAX_GAP
