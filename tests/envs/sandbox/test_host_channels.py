"""No host-wide state a candidate can set.

A hostile pair passed a secret between two slots through counters the whole host shares:
Linux AIO contexts (/proc/sys/fs/aio-nr) and ptys allocated through the jail's
/dev/ptmx (/proc/sys/kernel/pty/nr); SysV semaphores held kernel memory no limit
counted. Now: no AIO or SysV IPC call gets through the filter, the jail has no
ptys, each candidate's /proc/sys is an empty read-only directory, and the jail's
/dev (a tmpfs every candidate of a slot shared) is read-only.
"""

import errno

from mtrl.envs.sandbox import Limits, Program, SandboxPool

LIMITS = Limits(wall_s_per_test=5.0, wall_s_total=10.0, cpu_s=2.0, memory_bytes=384 << 20)

PROBES = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)

def call(number, *args):
    result = libc.syscall(number, *[ctypes.c_long(a) for a in args])
    return ctypes.get_errno() if result < 0 else 0

def opened(path, flags=os.O_RDONLY):
    try:
        os.close(os.open(path, flags))
        return 0
    except OSError as error:
        return error.errno

def pty():
    try:
        os.openpty()
        return 0
    except OSError as error:
        return error.errno

def listed(path):
    return sorted(os.listdir(path))

def written(path):
    try:
        with open(path, 'w') as handle:
            handle.write('1')
        return 0
    except OSError as error:
        return error.errno
"""


def test_kernel_objects_that_outlive_limits_are_refused(pool):
    context = "ctypes.addressof(ctypes.c_ulong(0))"
    denied = errno.EPERM
    tests = (f"assert call(64, 0, 1, 0o1600) == {denied}",  # semget
             f"assert call(65, 0, 0, 0) == {denied}",  # semop
             f"assert call(29, 0, 4096, 0o1600) == {denied}",  # shmget
             f"assert call(68, 0, 0o1600) == {denied}",  # msgget
             f"assert call(206, 1, {context}) == {denied}",  # io_setup
             f"assert call(209, 0, 0, 0) == {denied}")  # io_submit
    result = pool.submit(Program(PROBES, tests, setup="import ctypes")).result()
    assert result.passed, [(t.source, t.message) for t in result.tests if t.status != "passed"]


def test_no_ptys_no_proc_sys_and_a_read_only_dev(pool):
    gone = errno.ENOENT
    tests = (f"assert opened('/dev/ptmx', os.O_RDWR) == {gone}",
             f"assert opened('/dev/pts/ptmx', os.O_RDWR) == {gone}",
             "assert pty() != 0 and listed('/dev/pts') == []",
             "assert listed('/proc/sys') == [] and 'sys' in listed('/proc')",
             f"assert opened('/proc/sys/fs/aio-nr') == {gone}",
             f"assert opened('/proc/sys/kernel/pty/nr') == {gone}",
             f"assert opened('/proc/sys/fs/file-nr') == {gone}",
             f"assert written('/proc/sys/x') == {errno.EROFS}",
             f"assert written('/dev/stash') == {errno.EROFS}",
             f"assert written('/dev/pts/stash') == {errno.EROFS}",
             "assert written('/dev/shm/mine') == 0 and written('/tmp/mine') == 0",
             "assert opened('/dev/null', os.O_RDWR) == 0 and opened('/dev/urandom') == 0")
    result = pool.submit(Program(PROBES, tests, setup="import os")).result()
    assert result.passed, [(t.source, t.message) for t in result.tests if t.status != "passed"]


# One slot's candidate sets what it can of host-wide state and holds it; a candidate
# of another slot, judged at the same time, tries to read it.
SETTER = PROBES + """
import time
def hold():
    handles = [call(206, 4, ctypes.addressof(ctypes.c_ulong(0))) for _ in range(8)]
    ptys = [pty() for _ in range(3)]
    try:
        open('/dev/mtrl-relay', 'w').write('1234')
    except OSError:
        pass
    time.sleep(1.5)
    return handles, ptys
"""
READER = """
import os, time
def read():
    time.sleep(0.5)
    seen = {}
    for path in ('/proc/sys/fs/aio-nr', '/proc/sys/kernel/pty/nr', '/dev/mtrl-relay'):
        try:
            seen[path] = open(path).read().strip()
        except OSError as error:
            seen[path] = error.errno
    return seen
"""


def test_a_concurrent_slot_reads_nothing_another_set():
    with SandboxPool(num_workers=2, limits=LIMITS) as pool:
        setter = pool.submit(Program(SETTER, ("held = hold()\nassert held == 0, held",)))
        reader = pool.submit(Program(READER, ("seen = read()\nassert seen == 0, seen",)))
        seen = reader.result().tests[0].message
        held = setter.result().tests[0].message
    gone = {"/proc/sys/fs/aio-nr": errno.ENOENT, "/proc/sys/kernel/pty/nr": errno.ENOENT,
            "/dev/mtrl-relay": errno.ENOENT}
    assert seen == repr(gone), (seen, held)
    assert held == repr(([errno.EPERM] * 8, [errno.ENOENT] * 3)), held
