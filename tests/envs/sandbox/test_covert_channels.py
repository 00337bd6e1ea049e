"""Kernel state every jail shares, closed to candidates.

All jails bind the same /usr (and the same host device nodes): a lock taken on one
of its files is seen by every other jail, so flock() or fcntl() locks pass bits
between concurrent candidates, and /proc/locks lists everybody's. inotify (and
dnotify, fanotify) on the standard library's directory tells a candidate which
modules the judge imports for the hidden test; mincore() and cachestat() tell the
same from the page cache. Each is refused with EPERM.
"""

import errno

from mtrl.envs.sandbox import Program

PROBES = """
import ctypes, fcntl, os, struct
libc = ctypes.CDLL(None, use_errno=True)
SHARED = os.__file__  # a standard-library file every jail sees

def _errno(call):
    try:
        call()
        return 0
    except OSError as error:
        return error.errno

def flock():
    with open(SHARED) as handle:
        return _errno(lambda: fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB))

def posix_lock(command):
    with open(SHARED) as handle:
        record = struct.pack('hhqqi4x', fcntl.F_RDLCK, 0, 0, 0, 0)
        return _errno(lambda: fcntl.fcntl(handle, command, record))

def dnotify():
    fd = os.open(os.path.dirname(SHARED), os.O_RDONLY)
    try:
        return _errno(lambda: fcntl.fcntl(fd, 1026, 0x1))  # F_NOTIFY, DN_ACCESS
    finally:
        os.close(fd)

def raw(name, *args):
    result = getattr(libc, name)(*args)
    return ctypes.get_errno() if result == -1 else 0

def mincore():
    libc.mmap.restype = ctypes.c_void_p
    with open(SHARED, 'rb') as handle:
        address = libc.mmap(None, ctypes.c_size_t(4096), 1, 2, handle.fileno(), ctypes.c_long(0))
        vector = ctypes.create_string_buffer(1)
        result = libc.syscall(27, ctypes.c_void_p(address), ctypes.c_size_t(4096), vector)
        return ctypes.get_errno() if result == -1 else 0

def wide(number, command, argument):
    # the system call with a 64-bit command whose low 32 bits the kernel reads
    with open(SHARED) as handle:
        record = ctypes.create_string_buffer(struct.pack('hhqqi4x', fcntl.F_RDLCK, 0, 0, 0, 0))
        first = handle.fileno() if number == 72 else command
        second = command if number == 72 else argument
        result = libc.syscall(number, ctypes.c_long(first), ctypes.c_long(second), record)
        return ctypes.get_errno() if result == -1 else 0

def proc_locks():
    try:
        with open('/proc/locks') as handle:
            return handle.read()
    except OSError:
        return ''
"""


def test_locks_and_file_watches_on_shared_files_are_refused(pool):
    denied = errno.EPERM
    tests = (f"assert flock() == {denied}",
             f"assert posix_lock(fcntl.F_SETLK) == {denied}",
             f"assert posix_lock(fcntl.F_GETLK) == {denied}",
             f"assert posix_lock(37) == {denied}",  # F_OFD_SETLK
             f"assert dnotify() == {denied}",
             f"assert raw('inotify_init1', 0) == {denied}",
             f"assert raw('inotify_init') == {denied}",
             f"assert raw('fanotify_init', 0, 0) == {denied}",
             f"assert mincore() == {denied}",
             "assert proc_locks() == ''",
             f"assert wide(72, 1 << 32 | fcntl.F_SETLK, 0) == {denied}",  # fcntl
             f"assert wide(157, 1 << 32 | 1, 0) == {denied}")  # prctl(PR_SET_PDEATHSIG, 0)
    result = pool.submit(Program(PROBES, tests, setup="import fcntl")).result()
    assert result.passed, [(t.source, t.status, t.message) for t in result.tests if t.status != "passed"]


def test_honest_databases_without_file_locks_still_work(pool):
    code = ("import sqlite3, dbm.dumb\ndef f():\n    db = sqlite3.connect(':memory:')\n"
            "    db.execute('create table t (x)')\n    db.executemany('insert into t values (?)', [(1,), (2,)])\n"
            "    total = db.execute('select sum(x) from t').fetchone()[0]\n"
            "    with dbm.dumb.open('store', 'c') as store:\n        store['k'] = 'v'\n"
            "        kept = store['k']\n    return total, kept\n")
    result = pool.submit(Program(code, ("assert f() == (3, b'v')",))).result()
    assert result.passed, result.tests
