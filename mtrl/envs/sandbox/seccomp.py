"""The seccomp filter every candidate process runs under (docs/sandbox.md).

Built once per pool process with libseccomp (through `pyseccomp`) and exported as
a classic BPF program: plain bytes that travel to the slot in its argv. The slot
never imports pyseccomp (the jail holds no site-packages); a candidate installs
the bytes with one prctl(PR_SET_SECCOMP) after PR_SET_NO_NEW_PRIVS and before any
of its code runs. Filters are inherited by every child and cannot be removed.

An allowlist: the calls allowlist.CALLS names are allowed, every other
call fails with EPERM, so a call a newer kernel adds is refused by default; the
extended-attribute calls (allowlist.NOT_SUPPORTED) answer ENOTSUP instead, which
shutil takes for "no xattrs here". prctl is not allowed at all (so neither
PR_SET_PDEATHSIG, which would untie a candidate from its slot, nor
PR_SET_DUMPABLE, which keeps a two-agent program's main closed to its helper).
Some calls are allowed only with certain arguments:
  fcntl   the commands of allowlist.FCNTL_COMMANDS (no locks, leases, dnotify);
  ioctl   the requests of allowlist.IOCTL_REQUESTS (no terminal or device control);
  socketpair  AF_UNIX only; socket answers EAFNOSUPPORT for every other family
          (no inet, vsock, netlink or packet sockets) and EPERM for AF_UNIX:
          with bind, listen, connect, accept and setsockopt refused (allowlist.
          REFUSED), a candidate's sockets are the channel it inherits and the
          socketpairs it makes, each with one peer and the default send buffer;
  sendto  only without an address (send(2)): no datagram to a named socket;
          with sendmsg refused too no socket state of a candidate outlives it,
          and what its sockets hold is bounded per descriptor
          (confinement.socket_memory_bound);
  clone   a thread (CLONE_THREAD) only with CLONE_FILES: every thread of a
          process shares its descriptor table, so RLIMIT_NOFILE bounds the
          process (a thread with a table of its own had 64 more); never a
          CLONE_NEW* flag (a namespace of its own); refused with EPERM. clone3
          fails with ENOSYS so that libc falls back to clone, whose flags the
          filter can read (clone3 passes them in memory);
  close_range  without CLOSE_RANGE_UNSHARE (which gives the caller a table of
          its own); unshare is refused whole.
A rule on an int argument (fcntl's command, ioctl's request) compares its low 32 bits: the kernel reads only those, and an exact 64-bit match
would let `1 << 32 | PR_SET_PDEATHSIG` past a rule that refuses it. System calls
of a foreign ABI (32-bit x86) are killed by libseccomp's architecture check.

Candidates whose Limits allow no extra process (max_processes=0, the default) get
the no-process variant: fork, vfork and clone without CLONE_THREAD fail with
EAGAIN (Python raises BlockingIOError), while threads still start. Processes a
Limits allows (fork, vfork, clone without CLONE_THREAD) get a descriptor table of
their own, as fork gives: each is bounded by RLIMIT_NOFILE and counted by
max_processes. One filter, not two stacked: each install costs the kernel about 0.3 ms of CPU whatever its
size (measured in the jail: 1 instruction 0.27-0.29 ms, 116 instructions
0.34-0.36 ms). RLIMIT_NPROC alone is exact only with a per-process uid; in the
jail every slot process shares one uid, so its count is a bound that a task
still exiting when the limit was set could loosen by one.

The audit variant (build_filter(audit=True), for tools/audit_seccomp.py only)
lets every unlisted call through but has the kernel log it (SECCOMP_RET_LOG);
the calls and arguments refused on purpose (allowlist.REFUSED, prctl among them,
the lock commands, CLONE_NEW*, a thread without CLONE_FILES, CLOSE_RANGE_UNSHARE,
socket(AF_UNIX), sendto with an address) stay refused there.
"""

from __future__ import annotations

import ctypes
import errno
import os

# fcntl commands refused on purpose (the audit filter keeps them refused): F_GETLK,
# F_SETLK, F_SETLKW, the open-file-description locks, leases and dnotify.
_FCNTL_REFUSED = (5, 6, 7, 36, 37, 38, 1024, 1025, 1026)
_CLONE_NEW_FLAGS = (0x00000080, 0x00020000, 0x02000000, 0x04000000, 0x08000000,
                    0x10000000, 0x20000000, 0x40000000)  # time ns .. net ns
_CLONE_THREAD = 0x00010000
_CLONE_FILES = 0x00000400
_CLOSE_RANGE_UNSHARE = 2
_AF_UNIX = 1
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_ARGUMENT_CHECKED = ("fcntl", "ioctl", "socket", "socketpair", "sendto", "close_range",
                     "clone", "clone3", "fork", "vfork")

_PROGRAMS: dict[bool, bytes] = {}


def build_program() -> bytes:
    """The filter as BPF bytes (8 bytes an instruction); cached per process.

    Raises ImportError/OSError where pyseccomp or libseccomp is missing.
    """
    if False not in _PROGRAMS:
        _PROGRAMS[False] = build_filter()
    return _PROGRAMS[False]


def build_no_process_program() -> bytes:
    """build_program's filter for candidates allowed no extra process (BPF
    bytes): fork/vfork and clone without CLONE_THREAD fail with EAGAIN."""
    if True not in _PROGRAMS:
        _PROGRAMS[True] = build_filter(no_process=True)
    return _PROGRAMS[True]


def build_filter(calls=None, *, no_process: bool = False, audit: bool = False) -> bytes:
    """The candidates' filter as BPF bytes, not cached.

    calls: the allowed system calls (default allowlist.CALLS); no_process: the
    no-process variant; audit: unlisted calls are allowed and logged by the kernel
    (SECCOMP_RET_LOG) instead of refused, except the calls and arguments refused
    on purpose. Only the audit script asks for anything but the defaults.
    """
    import pyseccomp as sc

    from mtrl.envs.sandbox import allowlist

    calls = allowlist.CALLS if calls is None else calls
    refused = sc.ERRNO(errno.EPERM)
    rules = sc.SyscallFilter(defaction=sc.LOG if audit else refused)
    _add(sc, rules, sc.ALLOW, [name for name in calls if name not in _ARGUMENT_CHECKED])
    _add(sc, rules, sc.ERRNO(errno.ENOTSUP), allowlist.NOT_SUPPORTED)
    for call, values in (("fcntl", allowlist.FCNTL_COMMANDS),
                         ("ioctl", allowlist.IOCTL_REQUESTS)):
        if call in calls:
            for value in values.values():
                rules.add_rule(sc.ALLOW, call, _low32(sc, 1, value))
    for call in ("socket", "socketpair"):
        if call in calls:
            rules.add_rule(sc.ALLOW, call, sc.Arg(0, sc.EQ, _AF_UNIX))
        # The whole 64-bit register: only the exact value passes.
        rules.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), call, sc.Arg(0, sc.NE, _AF_UNIX))
    if "sendto" in calls:  # dest_addr, a pointer: NULL is send(2)
        rules.add_rule(sc.ALLOW, "sendto", sc.Arg(4, sc.EQ, 0))
    if "close_range" in calls:  # flags: an unsigned int, so the low half is all
        rules.add_rule(sc.ALLOW, "close_range",
                       sc.Arg(2, sc.MASKED_EQ, _CLOSE_RANGE_UNSHARE, 0))
    rules.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    _add_clone_rules(sc, rules, calls, no_process)
    if audit:  # what the default refuses on purpose stays refused
        _add(sc, rules, refused, [name for name in allowlist.REFUSED if name not in calls])
        for command in _FCNTL_REFUSED:
            rules.add_rule(refused, "fcntl", _low32(sc, 1, command))
        for flag in _CLONE_NEW_FLAGS:
            rules.add_rule(refused, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
        # A thread with a descriptor table of its own, a unix socket that could
        # bind, listen or connect, a datagram to a named socket, and close_range's
        # way to a table of its own.
        rules.add_rule(refused, "clone", sc.Arg(0, sc.MASKED_EQ, _CLONE_THREAD | _CLONE_FILES,
                                                _CLONE_THREAD))
        if "socket" not in calls:
            rules.add_rule(refused, "socket", sc.Arg(0, sc.EQ, _AF_UNIX))
        rules.add_rule(refused, "sendto", sc.Arg(4, sc.NE, 0))
        rules.add_rule(refused, "close_range", sc.Arg(2, sc.MASKED_EQ, _CLOSE_RANGE_UNSHARE,
                                                      _CLOSE_RANGE_UNSHARE))
    return _export(rules)


def _add_clone_rules(sc, rules, calls, no_process: bool) -> None:
    """fork, vfork and clone: a thread only with CLONE_FILES (one descriptor table
    per process: a thread without it is refused, by the default action), nothing
    with a CLONE_NEW* flag; a process (no CLONE_THREAD) is allowed, or answered
    EAGAIN in the no-process variant. The conditions do not overlap, so no rule's
    action depends on libseccomp's precedence."""
    new_flags = sum(_CLONE_NEW_FLAGS)
    thread = sc.Arg(0, sc.MASKED_EQ, _CLONE_THREAD | _CLONE_FILES | new_flags,
                    _CLONE_THREAD | _CLONE_FILES)
    process = sc.Arg(0, sc.MASKED_EQ, _CLONE_THREAD | new_flags, 0)
    if "clone" in calls:
        rules.add_rule(sc.ALLOW, "clone", thread)
    if no_process:
        again = sc.ERRNO(errno.EAGAIN)
        _add(sc, rules, again, ("fork", "vfork"))
        rules.add_rule(again, "clone", process)
    else:
        _add(sc, rules, sc.ALLOW, [name for name in ("fork", "vfork") if name in calls])
        if "clone" in calls:
            rules.add_rule(sc.ALLOW, "clone", process)


def _low32(sc, index: int, value: int):
    """Argument `index` equals `value` in its low 32 bits. The kernel reads an int
    argument from the low half of its register, while seccomp compares all 64 bits:
    a rule on the full value would not match 1 << 32 | value."""
    return sc.Arg(index, sc.MASKED_EQ, 0xFFFFFFFF, value)


def _add(sc, rules, action, names) -> None:
    """`action` for every call in `names` that this architecture has (others are
    skipped: aarch64 has no open, stat, fork, ...)."""
    for name in names:
        try:
            rules.add_rule(action, name)
        except (OSError, ValueError, RuntimeError):
            continue  # not a system call of this architecture


def _export(rules) -> bytes:
    """libseccomp's rules as classic BPF bytes."""
    read_fd, write_fd = os.pipe()
    try:
        with os.fdopen(write_fd, "wb", closefd=True) as sink:
            rules.export_bpf(sink)
        chunks = []
        while chunk := os.read(read_fd, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(read_fd)
    program = b"".join(chunks)
    if not program or len(program) % 8:
        raise OSError("libseccomp exported an empty or malformed filter")
    return program


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(program: bytes) -> None:
    """Loads `program` (build_program's bytes) into this process for good.

    The caller has set PR_SET_NO_NEW_PRIVS. Raises OSError when the kernel refuses.
    """
    if not program or len(program) % 8:
        raise ValueError("a seccomp program is a non-empty multiple of 8 bytes")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"seccomp filter refused: {os.strerror(code)}")
