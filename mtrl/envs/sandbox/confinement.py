"""Confining the processes a slot starts (judge, zygote, candidates): namespaces and
mounts of their own, credentials, rlimits, stdio, parent-death signal, and the
Python-level fallbacks where the kernel offers nothing better. What is in force
where, and why: isolation.py.

Per candidate process: new session, RLIMIT_CPU (SIGXCPU, SIGKILL a second later) /
AS / FSIZE / NOFILE=64 / NPROC / CORE=0, stdin = /dev/null, stdout/stderr = pipes
drained and capped by the judge, the fixed environment CANDIDATE_ENV (set once in
the slot: nothing of the pool's environment is inherited), a fresh working
directory, PR_SET_NO_NEW_PRIVS, parent-death signal SIGKILL.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import resource
import signal
from typing import Protocol, Sequence

from mtrl.envs.sandbox.syscalls import (CLONE_NEWIPC, CLONE_NEWNS, CLONE_NEWPID, MS_BIND,
                                        MS_NODEV, MS_NOEXEC, MS_NOSUID, MS_PRIVATE, MS_REC,
                                        PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_PDEATHSIG,
                                        PR_SET_SECUREBITS, SECBIT_NOROOT, SECBIT_NOROOT_LOCKED,
                                        check, libc, mount, prctl)

class Report(Protocol):
    """What confinement reads of isolation.IsolationReport (which imports this module)."""

    filesystem: str
    users: str

UID_BASE = 2_000_000_000  # far above any account uid; uid = UID_BASE + pid
MAX_OPEN_FILES = 64
CANDIDATE_TMP_BYTES = 256 << 20  # each jailed candidate's own /tmp (and /dev/shm)
CANDIDATE_TMP_INODES = 32_768  # files and directories in it: bounds kernel memory too
# Where the kernel keeps the send buffer every new socket starts with (bytes).
SEND_BUFFER_SYSCTL = "/proc/sys/net/core/wmem_default"
# Threads a candidate allowed no process may start: RLIMIT_NPROC counts threads,
# and the seccomp filter's no-process rules (seccomp.py) already refuse every
# fork, so this room can only hold threads (their stacks count against RLIMIT_AS).
THREAD_ALLOWANCE = 64
# An empty directory of the jail's read-only root (jail.py makes it): bound over
# the candidate's /proc/sys, whose host-wide counters (fs/aio-nr, kernel/pty/nr,
# fs/file-nr, ...) another jail could read.
EMPTY_DIR = "/opt/mtrl-empty"
_PARK_FD = 200
_MAX_FD = 1 << 20


def unshare_pid_namespace() -> None:
    """The caller's next child is init of a new PID namespace: it cannot see or
    signal anything outside, and when it dies the kernel kills all it started."""
    check(libc.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")


def candidate_namespaces(report: Report) -> int:
    """The CLONE_NEW* flags of a candidate's own namespaces: PID (it is init
    there), and in the jail also IPC (SysV objects die with it) and mount
    (enter_candidate_mounts). Not a network namespace of its own: that cost about
    1.5 ms of CPU per candidate (docs/sandbox.md); instead candidates get no socket
    state that outlives them (seccomp.py: unix sockets only, no sendmsg), and the
    slot reaps one before it starts the next."""
    return CLONE_NEWPID | (CLONE_NEWIPC | CLONE_NEWNS if report.filesystem == "jail" else 0)


def unshare_candidate_namespaces(report: Report) -> None:
    """In an intermediate process: its next child gets candidate_namespaces()."""
    check(libc.unshare(candidate_namespaces(report)), "unshare(candidate namespaces)")


def enter_candidate_mounts() -> None:
    """In a jailed candidate (own mount namespace, capabilities not yet dropped):
    a tmpfs of its own, capped in bytes and in inodes, becomes /tmp and /dev/shm,
    the only places it can write; cwd is /tmp. Nothing of it is shared: when the
    candidate's processes are gone the kernel frees it with the namespace, so the
    slot never cleans up after a candidate, and a candidate that filled it or
    sprayed it with directories (kernel memory no size cap counts) leaves nothing
    for the next one. A fresh /proc shows its own PID namespace
    only: in the jail's, bwrap's init (pid 1 there, dumpable) would be open to
    writes through /proc/1/mem; its /proc/locks and /proc/sys are covered."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
          f"size={CANDIDATE_TMP_BYTES},nr_inodes={CANDIDATE_TMP_INODES},mode=0700")
    mount("/tmp", "/dev/shm", None, MS_BIND)
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    # /proc/locks lists every lock on the host (inode numbers included), not the
    # namespace's: covered (the candidate itself can take none: seccomp.py).
    mount("/dev/null", "/proc/locks", None, MS_BIND)
    # /proc/sys holds host-wide counters a candidate could set in one jail and
    # read in another (fs/aio-nr, kernel/pty/nr did): an empty read-only
    # directory instead (the bind keeps the source's read-only flag).
    mount(EMPTY_DIR, "/proc/sys", None, MS_BIND)
    os.chdir("/tmp")


def socket_memory_bound(send_buffer: int) -> int:
    """Bytes of kernel memory (skb truesize) the sockets of one candidate process
    can hold, for a default send buffer of `send_buffer` bytes (SEND_BUFFER_SYSCTL).

        bound = MAX_OPEN_FILES * 2 * send_buffer

    Under the seccomp filter (seccomp.py) each of its at most MAX_OPEN_FILES
    descriptors is the inherited channel or one end of a socketpair: one peer,
    whose data in flight to it the kernel charges to that peer's send buffer and
    stops at it, past it by at most one buffer (a datagram, or a stream chunk of
    at most half of it). setsockopt is refused, so no buffer grows; no listen or
    connect, so no connection waits to be accepted. Fixed: it grows neither with
    what the candidate sends nor with how often it closes and reopens.
    """
    if send_buffer <= 0:
        raise ValueError(f"send_buffer must be positive, got {send_buffer}")
    return MAX_OPEN_FILES * 2 * send_buffer


def guard_signals() -> None:
    """Last-resort fallback (shared uid, no PID namespace): the candidate may only
    signal itself. A Python-level guard that native code could bypass."""
    own = os.getpid()

    def guarded(pid: int, sig: int) -> None:
        if pid != own:
            raise PermissionError(1, "signalling other processes is disabled in the sandbox")
        os_kill(pid, sig)

    os_kill = os.kill
    os.kill = guarded
    os.killpg = lambda pgid, sig: guarded(-pgid, sig)


def harden_trusted_process() -> None:
    """Not dumpable: no ptrace, no /proc/<pid>/mem or environ for same-uid processes."""
    prctl(PR_SET_DUMPABLE, 0)


def _drop_capabilities() -> None:
    # capset(version 3, pid 0) with empty sets: inside a user namespace the
    # process would otherwise keep every capability of that namespace.
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    check(libc.capset(header, data), "capset")


def count_tasks(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count


def become_unprivileged(report: Report) -> int:
    """Switches to this process's own uid (root) or drops capabilities (non-root).

    Returns the uid now in force.
    """
    if report.users == "per-process-uid":
        uid = UID_BASE + os.getpid()
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    else:
        uid = os.getuid()
        if uid == 0:  # root of a user namespace (the jail): exec must not restore caps
            try:
                prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED)
            except OSError:
                pass
        try:
            _drop_capabilities()
        except OSError:
            pass
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    return uid


def die_with_parent() -> None:
    """SIGKILL when the parent (the slot) dies. Call after the last credential
    change (which clears it) and once the final parent is in place."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def limit_processes(report: Report, extra: int, task_base: int = 0) -> None:
    """RLIMIT_NPROC: this process plus `extra` more (threads count too).

    With a per-process uid the count starts at this process alone. With a shared
    uid every task of the user counts, so the limit is the current count plus
    `extra` (a bound, not an exact allowance, when other sandboxes run beside);
    `task_base`, when given, is that count as the slot saw it (a jailed candidate's
    own /proc shows only itself).
    """
    if report.users == "per-process-uid":
        allowed = 1 + extra
    else:
        allowed = (task_base or count_tasks(os.getuid())) + extra
    resource.setrlimit(resource.RLIMIT_NPROC, (allowed, allowed))


def set_rlimits(cpu_s: float, memory_bytes: int, file_size_bytes: int) -> None:
    """Per-process limits of a candidate (Limits.cpu_s, memory_bytes, file_size_bytes).

    Soft = hard except for CPU: SIGXCPU at the soft limit, SIGKILL one second
    later at the hard limit for a candidate that ignores SIGXCPU. RLIMIT_CPU has
    whole-second resolution (rounded up). Plain numbers rather than a Limits:
    building the dataclass in every fresh candidate costs more than the rest.
    """
    cpu = max(1, int(-(-cpu_s // 1)))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    for kind, value in ((resource.RLIMIT_AS, memory_bytes),
                        (resource.RLIMIT_FSIZE, file_size_bytes),
                        (resource.RLIMIT_NOFILE, MAX_OPEN_FILES),
                        (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(kind, (value, value))


def redirect_stdio(stdout_fd: int, stderr_fd: int, keep: Sequence[int]) -> list[int]:
    """stdin=/dev/null, stdout/stderr to the given fds, every other fd closed.

    Returns the kept descriptors' new numbers (3, 4, ...), in order.
    """
    devnull = os.open(os.devnull, os.O_RDONLY)
    # Park copies above every slot used below, so no dup2 can clobber a source.
    parked = [fcntl.fcntl(fd, fcntl.F_DUPFD, _PARK_FD) for fd in keep]
    os.dup2(devnull, 0)
    os.dup2(stdout_fd, 1)
    os.dup2(stderr_fd, 2)
    final = []
    for index, fd in enumerate(parked):
        os.dup2(fd, 3 + index, inheritable=False)
        final.append(3 + index)
    os.closerange(3 + len(keep), _MAX_FD)
    return final


def make_workdir_owned(path: str, uid: int) -> None:
    os.chown(path, uid, uid)
    os.chmod(path, 0o700)


def refuse_sockets() -> None:
    """Fallback without a network namespace: the socket constructors refuse.

    Only the module attributes are replaced: the real class stays reachable (e.g.
    through object.__subclasses__()), so this deters, it does not isolate. The
    caller makes its own socket to the judge before calling this.
    """
    import _socket
    import socket

    def refused(*args, **kwargs):
        raise PermissionError(13, "network access is disabled in the sandbox")

    class RefusedSocket:
        def __new__(cls, *args, **kwargs):
            refused()

    for module in (socket, _socket):
        for name in ("socket", "SocketType", "socketpair", "create_connection",
                     "create_server", "fromfd", "getaddrinfo"):
            if hasattr(module, name):
                setattr(module, name, RefusedSocket if name in ("socket", "SocketType")
                        else refused)

