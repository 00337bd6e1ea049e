"""The Linux system calls the sandbox makes through libc (unshare, mount, prctl, capset):
their flag values, and wrappers that raise OSError with the call's errno."""

from __future__ import annotations

import ctypes
import os

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_NEWPID = 0x20000000
CLONE_NEWIPC = 0x08000000
MS_NOEXEC = 8
MS_RDONLY, MS_NOSUID, MS_NODEV = 1, 2, 4
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
PR_SET_SECUREBITS, SECBIT_NOROOT, SECBIT_NOROOT_LOCKED = 28, 1, 2

# The interpreter links libc: its symbols resolve without ctypes.util (which
# would import subprocess and threading into every slot).
libc = ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    """Raises OSError(errno) naming `what` when a libc call returned nonzero."""
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def prctl(option: int, arg: int) -> None:
    """prctl(option, arg, 0, 0, 0); OSError on failure."""
    check(libc.prctl(option, arg, 0, 0, 0), f"prctl({option})")


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    """mount(2) with str arguments (None: NULL); OSError on failure."""
    encode = lambda s: None if s is None else s.encode()  # noqa: E731
    check(libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)),
          f"mount {target}")


CLONE_PARENT = 0x00008000
CLONE_CHILD_CLEARTID = 0x00200000
CLONE_CHILD_SETTID = 0x01000000
_SIGCHLD = 17
# clone(2)'s raw argument order differs by architecture (tls and child_tid swap).
_CLONE = {"x86_64": (56, True), "aarch64": (220, False)}
# Called with the GIL held (PyDLL), as os.fork calls fork().
_pylibc = ctypes.PyDLL(None, use_errno=True)
_pylibc.syscall.restype = ctypes.c_long
libc.pthread_self.restype = ctypes.c_void_p


def _own_tid_address() -> int | None:
    """Where glibc keeps this thread's tid (struct pthread), as libthread_db finds
    it; None unless it reads as this (main, only) thread's tid."""
    try:
        bits, _, offset = (ctypes.c_uint32 * 3).in_dll(libc, "_thread_db_pthread_tid")
    except ValueError:
        return None
    address = libc.pthread_self() + offset
    ours = bits == 32 and ctypes.c_int.from_address(address).value == os.getpid()
    return address if ours else None


def fork_into(flags: int) -> int | None:
    """os.fork(), but the child starts in the new namespaces `flags` names
    (CLONE_NEW*) and as the caller's sibling (CLONE_PARENT: the caller's parent
    waits for it). One fork where an intermediate process would unshare, fork and
    exit: that intermediate cost about 0.6 ms of CPU per candidate.

    Returns the child's pid, 0 in the child, or None where this interpreter or
    libc does not allow it (use the intermediate). Like glibc's fork it has the
    kernel write the child's tid into glibc's thread record; unlike it, it runs no
    pthread_atfork handlers and resets no libc locks, so the caller must be
    single-threaded (the zygote is)."""
    call = _CLONE.get(os.uname().machine)
    tid = _own_tid_address()
    if call is None or tid is None:
        return None
    number, x86 = call
    flags |= CLONE_PARENT | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | _SIGCHLD
    last_two = (tid, 0) if x86 else (0, tid)  # x86_64: child_tid, tls; else tls, child_tid
    ctypes.pythonapi.PyOS_BeforeFork()
    pid = _pylibc.syscall(ctypes.c_long(number), ctypes.c_ulong(flags), None, None,
                          ctypes.c_void_p(last_two[0]), ctypes.c_void_p(last_two[1]))
    if pid == 0:
        ctypes.pythonapi.PyOS_AfterFork_Child()
        return 0
    errno = ctypes.get_errno()
    ctypes.pythonapi.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(errno, f"clone: {os.strerror(errno)}")
    return pid
