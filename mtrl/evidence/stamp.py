"""The one machine stamp a benchmark record carries: which code ran, where, on how many
threads, and how loaded the machine was before and after.

    stamp = machine_stamp()       # when the measurement starts
    ...
    stamp = finished(stamp)       # load_after added (bench_record.write_record does it)

  commit, dirty, diff_sha256  the checkout's code state, the three keys a run's
                              provenance holds (mtrl.training.run.provenance.code_state)
  host, machine, python       platform.node(), platform.machine(), the Python version
  cpus                        os.cpu_count(): the machine's logical CPUs
  threads                     the CPUs this process may run on (its affinity mask): the
                              most threads its work can use at once
  omp_num_threads             OMP_NUM_THREADS as set (None: each library's default)
  load_before, load_after     1-, 5- and 15-minute load averages at the start and the end

The machines are shared, so a number is read beside the load it was taken under
(docs/design.md section 8); a part of a run (a round, an arm) records its own span with
`load_average()` under the same two names. Standard library at import: the code state
loads the run package only when a stamp is made.
"""

from __future__ import annotations

import os
import platform
from typing import Any, Mapping

STAMP_KEYS = ("commit", "dirty", "diff_sha256", "host", "machine", "python", "cpus",
              "threads", "omp_num_threads", "load_before")


def load_average() -> list[float]:
    """The 1-, 5- and 15-minute load averages now."""
    return list(os.getloadavg())


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask; the CPU count where there is none)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def machine_stamp(code: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The stamp at the start of a measurement (module docstring). `code` replaces the
    checkout's code state (a record made from another checkout's numbers)."""
    if code is None:
        from mtrl.training.run.provenance import code_state
        code = code_state()
    return {"commit": code.get("commit"), "dirty": code.get("dirty"),
            "diff_sha256": code.get("diff_sha256"), "host": platform.node(),
            "machine": platform.machine(), "python": platform.python_version(),
            "cpus": os.cpu_count(), "threads": usable_cpus(),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "load_before": load_average()}


def finished(stamp: Mapping[str, Any]) -> dict[str, Any]:
    """`stamp` with load_after read now (a new dict; called again, it reads again)."""
    missing = [key for key in STAMP_KEYS if key not in stamp]
    if missing:
        raise ValueError(f"not a machine stamp: missing {missing}")
    return {**stamp, "load_after": load_average()}
