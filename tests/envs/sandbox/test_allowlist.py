"""The candidates' filter is an allowlist: a call it does not name is refused, a
call a newer kernel adds included, while the earlier argument checks (clone flags,
prctl, fcntl, sockets) still hold and honest programs still pass.

The whole filter is checked for every system call number by interpreting its BPF
(bpf.py), and a sample of calls is made for real in the jail, where the kernel's
answers must be the interpreter's."""

import errno

import pyseccomp as sc
import pytest

from mtrl.envs.sandbox import Program, allowlist, seccomp
from tests.envs.sandbox import bpf, honest

_CHECKED = {"fcntl", "ioctl", "socket", "socketpair", "clone", "clone3", "fork", "vfork"}
# Numbers past the last call libseccomp knows here are still answered: the kernel's
# newer calls (statmount 457, listmount 458, mseal 462, open_tree_attr 467) and
# ones no kernel has yet.
NUMBERS = range(1024)


def _name(number: int) -> str | None:
    try:
        name = sc.resolve_syscall(sc.Arch.NATIVE, number)
    except Exception:  # noqa: BLE001 - not a call libseccomp knows
        return None
    return name.decode() if isinstance(name, bytes) and name else None


def _number(name: str) -> int:
    return sc.resolve_syscall(sc.Arch.NATIVE, name)


def _expected_without_arguments(name: str | None, no_process: bool) -> tuple[int, int | None]:
    """(action, errno) the filter must answer for a call with all arguments 0."""
    if name in allowlist.NOT_SUPPORTED:
        return bpf.ERRNO, errno.ENOTSUP
    if name == "clone3":
        return bpf.ERRNO, errno.ENOSYS
    if name in ("socket", "socketpair"):  # family 0 (AF_UNSPEC) is not AF_UNIX
        return bpf.ERRNO, errno.EAFNOSUPPORT
    if name in ("fork", "vfork", "clone"):  # flags 0: a process, not a thread
        return (bpf.ERRNO, errno.EAGAIN) if no_process else (bpf.ALLOW, None)
    if name == "fcntl":  # command 0 is F_DUPFD
        return bpf.ALLOW, None
    if name in allowlist.CALLS and name not in _CHECKED:
        return bpf.ALLOW, None
    return bpf.ERRNO, errno.EPERM


@pytest.mark.parametrize("no_process", [False, True])
def test_every_call_outside_the_list_is_refused(no_process):
    program = (seccomp.build_no_process_program() if no_process
               else seccomp.build_program())
    wrong = {}
    for number in NUMBERS:
        name = _name(number)
        answer = bpf.run(program, number)
        got = (bpf.action(answer), bpf.errno_of(answer))
        if got != _expected_without_arguments(name, no_process):
            wrong[name or number] = got
    assert not wrong, wrong
    assert set(allowlist.CALLS).isdisjoint(allowlist.REFUSED)


def test_the_round_four_calls_are_refused_by_default():
    program = seccomp.build_program()
    for name in ("semget", "semop", "io_setup", "io_submit", "memfd_secret",
                 "sched_setaffinity", "prctl", "seccomp"):
        assert bpf.errno_of(bpf.run(program, _number(name))) == errno.EPERM, name
    for number in (457, 458, 462, 467, 600, 1000):  # statmount ... and future calls
        assert bpf.errno_of(bpf.run(program, number)) == errno.EPERM, number


def _call(program: bytes, name: str, *args: int) -> tuple[int, int | None]:
    answer = bpf.run(program, _number(name), tuple(args) + (0,) * (6 - len(args)))
    return bpf.action(answer), bpf.errno_of(answer)


@pytest.mark.parametrize("no_process", [False, True])
def test_argument_checks_of_earlier_rounds_still_hold(no_process):
    program = (seccomp.build_no_process_program() if no_process
               else seccomp.build_program())
    allow, eperm = (bpf.ALLOW, None), (bpf.ERRNO, errno.EPERM)
    high = 1 << 32
    for command in (5, 6, 7, 36, 37, 38, 1024, 1025, 1026):  # locks, leases, dnotify
        assert _call(program, "fcntl", 3, command) == eperm
        assert _call(program, "fcntl", 3, high | command) == eperm
    for command in allowlist.FCNTL_COMMANDS.values():
        assert _call(program, "fcntl", 3, command) == allow
        assert _call(program, "fcntl", 3, high | command) == allow  # the kernel reads 32 bits
    for request in allowlist.IOCTL_REQUESTS.values():
        assert _call(program, "ioctl", 1, request) == allow
    assert _call(program, "ioctl", 1, 0x5412) == eperm  # TIOCSTI: no terminal control
    for option in (1, 4, high | 1, 15, 22):  # PDEATHSIG, DUMPABLE, SET_NAME, SET_SECCOMP
        assert _call(program, "prctl", option) == eperm
    refused_family = (bpf.ERRNO, errno.EAFNOSUPPORT)
    for family in (2, 10, 16, 17, 38, 40, high | 1):  # inet, inet6, netlink, packet, alg, vsock
        assert _call(program, "socket", family, 1) == refused_family
        assert _call(program, "socketpair", family, 1) == refused_family
    assert _call(program, "socket", 1, 1) == eperm  # no unix socket to bind or connect
    assert _call(program, "socketpair", 1, 1) == allow
    thread = 0x3D0F00  # glibc's pthread_create flags
    assert _call(program, "clone", thread) == allow
    for flag in (0x80, 0x20000, 0x2000000, 0x4000000, 0x8000000, 0x10000000, 0x20000000,
                 0x40000000):  # every CLONE_NEW*
        assert _call(program, "clone", thread | flag) == eperm
        assert _call(program, "clone", 17 | flag) == eperm
    assert _call(program, "clone3") == (bpf.ERRNO, errno.ENOSYS)
    foreign = bpf.run(program, _number("getpid"), arch=bpf.AUDIT_ARCH_I386)
    assert bpf.action(foreign) in (0, bpf.KILL_PROCESS)  # a foreign ABI is killed


PROBE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def call(number, *args):
    result = libc.syscall(number, *[ctypes.c_long(a) for a in args])
    return [result if result < 0 else 0, ctypes.get_errno() if result < 0 else 0]
"""
# Calls that are safe to make even where a filter let them through.
PROBES = {"semget": (64, 0, 1, 0o1600), "io_setup": (206, 1, 0), "memfd_secret": (447, 0),
          "sched_setaffinity": (203, 0, 0, 0), "statmount": (457, 0, 0, 0, 0),
          "listmount": (458, 0, 0, 0, 0), "open_tree_attr": (467, -1, 0, 0, 0, 0),
          "unknown_1000": (1000,), "prctl_set_name": (157, 15, 0), "getppid": (110,)}


def test_the_kernel_answers_what_the_filter_says(pool):
    """A second implementation of the interpreter's verdicts: the same calls made
    in the jail (getppid is allowed: it returns 0 there, the slot's pid is outside
    the candidate's namespace)."""
    program = seccomp.build_no_process_program()  # what the default Limits run under
    tests = []
    for name, numbers in PROBES.items():
        answer = bpf.run(program, numbers[0], numbers[1:] + (0,) * (7 - len(numbers)))
        expected = [0, 0] if bpf.action(answer) == bpf.ALLOW else [-1, bpf.errno_of(answer)]
        call = f"call({', '.join(map(str, numbers))})"
        tests.append(f"assert {call} == {expected}, ({name!r}, {call})")
    assert "call(110) == [0, 0]" in tests[-1] and "[-1, 1]" in tests[0]
    result = pool.submit(Program(PROBE, tuple(tests))).result()
    assert result.passed, [(t.source, t.message) for t in result.tests if t.status != "passed"]


@pytest.mark.parametrize("index", range(len(honest.programs())))
def test_honest_programs_pass_under_the_allowlist(pool, index):
    program, limits = honest.programs()[index]
    result = pool.submit(program, limits).result()
    assert result.passed, result
