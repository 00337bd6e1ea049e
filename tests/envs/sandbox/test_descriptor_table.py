"""Every thread of a candidate process shares one descriptor table.

RLIMIT_NOFILE (confinement.MAX_OPEN_FILES) bounds a descriptor table, not a
process: a thread that got a table of its own (close_range with
CLOSE_RANGE_UNSHARE, or clone with CLONE_THREAD but not CLONE_FILES) had 64 more,
and 16 threads opened 960 descriptors, each of which can hold socket memory
(test_socket_memory.py). The filter now refuses both, and unshare stays refused.
"""

import dataclasses
import errno

import pytest

from mtrl.envs.sandbox import Limits, Program, seccomp
from mtrl.envs.sandbox.confinement import MAX_OPEN_FILES
from tests.envs.sandbox import bpf
from tests.envs.sandbox.hostile import LIBC
from tests.envs.sandbox.test_allowlist import _call

_THREAD = 0x3D0F00  # glibc's pthread_create flags, CLONE_FILES (0x400) among them
_FILES = 0x400
_UNSHARE = 2  # CLOSE_RANGE_UNSHARE
# Room for 16 threads and a large allocation on a busy test machine.
ROOMY = Limits(wall_s_per_test=10.0, wall_s_total=20.0, cpu_s=5.0, memory_bytes=384 << 20)


@pytest.mark.parametrize("no_process", [False, True])
def test_the_filter_keeps_one_table_per_process(no_process):
    program = (seccomp.build_no_process_program() if no_process
               else seccomp.build_program())
    allow, eperm = (bpf.ALLOW, None), (bpf.ERRNO, errno.EPERM)
    assert _call(program, "clone", _THREAD) == allow
    assert _call(program, "clone", _THREAD & ~_FILES) == eperm
    assert _call(program, "clone", 0x10000) == eperm  # CLONE_THREAD alone
    assert _call(program, "clone3") == (bpf.ERRNO, errno.ENOSYS)  # flags in memory
    assert _call(program, "unshare", _FILES) == eperm
    for flags in (0, 4):  # none, CLOSE_RANGE_CLOEXEC
        assert _call(program, "close_range", 3, 0xFFFFFFFF, flags) == allow
    for flags in (_UNSHARE, _UNSHARE | 4, 1 << 32 | _UNSHARE):
        assert _call(program, "close_range", 3, 0xFFFFFFFF, flags) == eperm
    process = (bpf.ERRNO, errno.EAGAIN) if no_process else allow
    assert _call(program, "clone", 17) == process  # fork's flags: a process of its own
    assert _call(program, "clone", 17 | _FILES) == process


# Each thread tries to get a table of its own, then opens descriptors until
# refused; all hold theirs until every thread has counted.
SPREAD = LIBC + """
import threading
def own_table():
    # close_range(1000, 1000, CLOSE_RANGE_UNSHARE): a copy of the table for this
    # thread alone (it closes nothing there: no descriptor 1000).
    return libc.syscall(436, 1000, 1000, 2) == 0
def spread(n):
    threading.stack_size(1 << 18)
    barrier, counts, unshared = threading.Barrier(n), [0] * n, [False] * n
    def work(i):
        unshared[i] = own_table()
        fds = []
        try:
            while len(fds) < 100:
                fds.append(os.open('/dev/null', os.O_RDONLY))
        except OSError:
            pass
        counts[i] = len(fds)
        barrier.wait()
        for fd in fds:
            os.close(fd)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts), sum(unshared)
def thread_without_files():
    # clone(CLONE_THREAD): the kernel itself answers EINVAL (no CLONE_SIGHAND), so
    # only a filter that refuses it first answers anything else; no thread starts.
    result = libc.syscall(56, ctypes.c_ulong(0x10000), 0, 0, 0, 0)
    return ctypes.get_errno() if result < 0 else 0
"""


def test_sixteen_threads_share_one_table(hostile_pool):
    result = hostile_pool.submit(Program(SPREAD, (
        f"opened, unshared = spread(16)\nassert opened < {MAX_OPEN_FILES} and unshared == 0, "
        "(opened, unshared)",
        f"assert thread_without_files() == {errno.EPERM}, thread_without_files()")),
        ROOMY).result()
    # Before: 960 descriptors, all 16 threads with a table of their own, and EINVAL.
    assert result.passed, [(t.source, t.message) for t in result.tests if t.status != "passed"]


# The honest twin: threads that each open and close files, recurse and compute,
# beside a large legal allocation; and, where the limits allow processes, a fork
# whose child opens files in its own table, as fork gives it.
HONEST = """
import math, os, sys, threading
from concurrent.futures import ThreadPoolExecutor
def depth(k):
    return 0 if k == 0 else 1 + depth(k - 1)
def work(i):
    fds = [os.open('/dev/null', os.O_RDONLY) for _ in range(3)]
    with open(f'file{i}', 'w') as handle:
        handle.write(str(i))
    total = depth(300) + math.isqrt(i * i) + len(fds) + int(open(f'file{i}').read())
    for fd in fds:
        os.close(fd)
    os.closerange(1000, 1010)
    return total
def threads(n):
    sys.setrecursionlimit(2000)
    with ThreadPoolExecutor(8) as pool:
        out = list(pool.map(work, range(n)))
    block = bytearray(128 << 20)
    block[-1] = 1
    return sum(out) + sum(block[-4096:])
def forked():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        fds = [os.open('/dev/null', os.O_RDONLY) for _ in range(40)]
        os.write(write, str(len(fds)).encode())
        os._exit(0)
    os.close(write)
    mine = [os.open('/dev/null', os.O_RDONLY) for _ in range(40)]
    os.waitpid(pid, 0)
    answer = int(os.read(read, 16))
    for fd in mine:
        os.close(fd)
    return answer + len(mine)
"""


def test_honest_threads_and_processes_keep_working(hostile_pool):
    expected = sum(300 + i + 3 + i for i in range(32)) + 1
    result = hostile_pool.submit(Program(HONEST, (f"assert threads(32) == {expected}",)),
                                 ROOMY).result()
    assert result.passed, [(t.source, t.message) for t in result.tests if t.status != "passed"]
    processes = dataclasses.replace(ROOMY, max_processes=2)
    result = hostile_pool.submit(Program(HONEST, ("assert forked() == 80",)), processes).result()
    assert result.passed, [(t.source, t.message) for t in result.tests if t.status != "passed"]
