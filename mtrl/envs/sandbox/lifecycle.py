"""How a slot describes, sweeps and cleans up after its candidate processes."""

from __future__ import annotations

import os
import signal
import time

from mtrl.envs.sandbox.types import Limits


# A candidate that is init of its PID namespace ignores the kernel's SIGXCPU; its
# handler exits with this status instead (zygote.py).
CPU_LIMIT_EXIT = 128 + signal.SIGXCPU
# A candidate the sandbox could not set up (mounts, credentials, filter) exits
# with this status before any of its code runs: the verdict is the sandbox's
# failure, never cached. Only before it has said it is set up (SET_UP below): the
# same status from a candidate's own code is an ordinary exit.
SETUP_FAILED_EXIT = 121
SETUP_FAILED = ["error", "SandboxError", "the sandbox could not set up the candidate process"]
# What a candidate's set-up writes back on its bootstrap socket once it is done,
# before any of its code runs: after it, the exit status above
# is the candidate's own, an ordinary exit.
SET_UP = b"+"


def describe_exit(status: int, cpu_s: float, limits: Limits, killed: bool,
                  set_up: bool = False) -> list[str]:
    """[test status, error type, message] for a candidate that ended mid-test.

    set_up: the candidate had said its set-up was done (SET_UP), so nothing it
    exits with is the sandbox's failure."""
    if killed:
        return ["error", "Killed", "the candidate was stopped by the judge"]
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == SETUP_FAILED_EXIT and not set_up:
        return list(SETUP_FAILED)
    # (A candidate could exit with the CPU-limit status itself: it gains nothing,
    # a timeout is no more a pass than an exit.)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == CPU_LIMIT_EXIT:
        return ["timeout", "CPUTimeLimitExceeded", f"CPU time limit of {limits.cpu_s} s exceeded"]
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


# The judge's own CPU limit (judge.Judge.timed) ended it: test code stuck in C on
# a candidate's value. The program's doing: its test is a timeout, never a
# "sandbox failure" (slot_client.assemble reads the "program" prefix).
JUDGE_CPU_ABORT = ("program: the judge exceeded its per-test CPU limit on this "
                   "program's values (test code stuck in C)")


def judge_exit(status: int) -> str:
    """The abort reason for a judge that died with `status`; "" when not the
    program's doing (then the program gets a sandbox failure)."""
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
        return JUDGE_CPU_ABORT
    return ""


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


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_tree(path: str) -> bool:
    """Removes the directory `path` and everything in it; True on success.

    Never raises and never recurses: a candidate controls the tree's shape (a
    1500-deep chain makes shutil.rmtree raise RecursionError; long names exceed
    PATH_MAX). Each subdirectory found is first renamed up to the top of `path`
    (a rename within one filesystem is O(1)), so at most two directories are open
    at any time and no path is longer than two names. False (some entry would
    not go) tells the slot to have itself replaced, never to fail a program.
    """
    try:
        top = os.open(path, _DIR_FLAGS)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        pending = [None]  # None: `path` itself; else a name directly under it
        while pending:
            name = pending.pop()
            fd = top if name is None else os.open(name, _DIR_FLAGS, dir_fd=top)
            try:
                _empty(fd, top, pending)
            finally:
                if fd != top:
                    os.close(fd)
            if name is not None:
                os.rmdir(name, dir_fd=top)
        os.close(top)
        top = -1
        os.rmdir(path)
        return True
    except (OSError, ValueError, RecursionError, MemoryError):
        return False
    finally:
        if top >= 0:
            os.close(top)


def _empty(fd: int, top: int, pending: list) -> None:
    """Unlinks the files of directory `fd`; moves its subdirectories under `top`."""
    try:
        os.chmod(fd, 0o700)  # a candidate may have made it unreadable (same uid)
    except OSError:
        pass
    with os.scandir(fd) as entries:
        names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    for name, is_dir in names:
        if not is_dir:
            os.unlink(name, dir_fd=fd)
            continue
        if fd == top:
            pending.append(name)
            continue
        while True:
            moved = f".rm-{os.urandom(8).hex()}"
            try:
                os.stat(moved, dir_fd=top, follow_symlinks=False)
            except FileNotFoundError:
                break
        os.rename(name, moved, src_dir_fd=fd, dst_dir_fd=top)
        pending.append(moved)
