"""Timing one call, for the benchmarks (one definition instead of one per program).

    result, record = timed(fn)   # record: wall_s, cpu_s, load1
    seconds = wall_seconds(fn)   # wall clock only (best-of loops)

cpu_s is this process's CPU time, every thread's, user + system: on a shared machine
other processes stretch the wall time, not the work done, so it is the steadier number.
load1 is the 1-minute load average just before the call, kept beside each timing so a
reader can tell a quiet measurement from a loaded one (the run's own load before and
after is in its stamp: stamp.py). Standard library only: bench/tunix.py's worker
imports it inside Tunix's own virtual environment.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far (all its threads)."""
    t = os.times()
    return t.user + t.system


def timed(fn: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
    """Runs fn() once: (its result, {"wall_s", "cpu_s", "load1"}). fn must finish its
    work before returning (block_until_ready on what it computed)."""
    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), cpu_seconds()
    result = fn()
    return result, {"wall_s": time.perf_counter() - wall, "cpu_s": cpu_seconds() - cpu,
                    "load1": load}


def wall_seconds(fn: Callable[[], Any]) -> float:
    """Wall-clock seconds of one fn() call."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
