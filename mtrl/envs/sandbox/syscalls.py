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
