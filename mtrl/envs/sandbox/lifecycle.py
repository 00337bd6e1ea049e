"""How a slot describes, sweeps and cleans up after its candidate processes."""

from __future__ import annotations

import os
import signal
import time

from mtrl.envs.sandbox.types import Limits


def describe_exit(status: int, cpu_s: float, limits: Limits, killed: bool) -> list[str]:
    """[test status, error type, message] for a candidate that ended mid-test."""
    if killed:
        return ["error", "Killed", "the candidate was stopped by the judge"]
    if os.WIFEXITED(status):
        return ["error", "CandidateExited", "the candidate process exited with status "
                f"{os.WEXITSTATUS(status)} during the test"]
    signum = os.WTERMSIG(status)
    if signum == signal.SIGXCPU or (signum == signal.SIGKILL and cpu_s >= limits.cpu_s):
        return ["timeout", "CPUTimeLimitExceeded", f"CPU time limit of {limits.cpu_s} s exceeded"]
    if signum == signal.SIGXFSZ:
        return ["error", "FileSizeLimitExceeded",
                f"file size limit of {limits.file_size_bytes} bytes exceeded"]
    if signum == signal.SIGSEGV:
        return ["error", "Crashed", "segmentation fault (for example a stack overflow)"]
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = str(signum)
    return ["error", "Killed", f"the candidate process was killed by {name}"]


def make_workdir() -> str:
    # Not tempfile.mkdtemp: tempfile imports random, whose fork hook would run in
    # every candidate. The slot's /tmp is private to it when the fs is masked.
    while True:
        path = os.path.join("/tmp", f"cand-{os.getpid()}-{os.urandom(6).hex()}")
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue


def kill_uid(uid: int) -> None:
    """Kills every process of `uid` (escaped descendants of a candidate, which
    may have left its process group), from a helper that takes that uid."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            for _ in range(100):
                os.kill(-1, signal.SIGKILL)  # every process this uid may signal, not self
        except OSError:
            pass
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def kill_uids_from_outside(uids: set[int], timeout_s: float = 2.0) -> None:
    """Kills every live process whose real uid is in `uids`, by scanning /proc.

    For the pool when it replaces a slot: the slot that swept its candidates' uids
    (kill_uid) is gone, and their children in sessions of their own, without a
    parent-death signal, live on. No fork here (the pool may be a multi-threaded
    trainer); root may signal any uid. Rescans until none is left, since one may
    fork while the scan runs (RLIMIT_NPROC keeps that short).
    """
    deadline = time.monotonic() + timeout_s
    while uids and time.monotonic() < deadline:
        found = [pid for pid in _pids() if _live_uid(pid) in uids]
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _live_uid(pid: int) -> int | None:
    """The real uid of a process that has not exited yet (zombies: None). Read from
    status, not /proc/<pid>'s owner: that is root for a non-dumpable process."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            text = handle.read()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    if fields.get("State", "Z").split()[:1] in (["Z"], ["X"]):
        return None
    try:
        return int(fields["Uid"].split()[0])
    except (KeyError, IndexError, ValueError):
        return None
