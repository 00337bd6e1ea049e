"""Hardened execution of untrusted Python against tests (docs/design.md section 7).

    with SandboxPool(limits=Limits(wall_s_per_test=2.0)) as pool:
        results = pool.run_batch([Program(code, ("assert f(1) == 2",))])

Layout: types (value types), codec (plain data across the boundary), isolation
(namespaces, uids, rlimits), candidate (runs untrusted code), judge and
judge_main (run the tests, decide verdicts), prefetch (batched calls), slot (warm
worker process), pool (SandboxPool), cache (sqlite result cache), cli
(`python -m mtrl.envs.sandbox`).

The public names below are loaded on first use (PEP 562), so that a slot process,
which imports this package on its way to mtrl.envs.sandbox.slot, stays lean: every
module it holds makes each fork of a candidate dearer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mtrl.envs.sandbox.types import (ExecutionResult, Limits, Program, SyntaxErrorInfo,
                                     TestResult, TestStatus)

_LAZY = {
    "SandboxPool": "mtrl.envs.sandbox.pool",
    "run_program": "mtrl.envs.sandbox.pool",
    "ResultCache": "mtrl.envs.sandbox.cache",
    "cache_key": "mtrl.envs.sandbox.cache",
    "HARNESS_VERSION": "mtrl.envs.sandbox.cache",
    "IsolationReport": "mtrl.envs.sandbox.isolation",
    "network_isolation": "mtrl.envs.sandbox.isolation",
}

__all__ = [
    "ExecutionResult", "HARNESS_VERSION", "IsolationReport", "Limits", "Program",
    "ResultCache", "SandboxPool", "SyntaxErrorInfo", "TestResult", "TestStatus",
    "cache_key", "network_isolation", "run_program",
]

if TYPE_CHECKING:
    from mtrl.envs.sandbox.cache import HARNESS_VERSION, ResultCache, cache_key
    from mtrl.envs.sandbox.isolation import IsolationReport, network_isolation
    from mtrl.envs.sandbox.pool import SandboxPool, run_program


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
