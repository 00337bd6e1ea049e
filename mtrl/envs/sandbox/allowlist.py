"""The system calls a candidate may make: everything else is refused.

An allowlist, not a denylist: a call this list does not name fails with EPERM,
so a call a newer kernel adds (or an old one nobody thought of: SysV semaphores,
Linux AIO, memfd_secret, the newer mount calls) is refused by default. seccomp.py
turns it into the filter; docs/sandbox.md has the table and how it was derived:
every honest corpus (HumanEval and MBPP canonical solutions, the honest programs
of tests/envs/sandbox, the project's sandbox tests) ran under the audit filter
(seccomp.build_filter(audit=True): this list allowed, every other call allowed
but logged by the kernel) until a run logged nothing (tools/audit_seccomp.py).
CALLS marks each name as measured ("m", "t") or added, with why. The argument
values of fcntl and ioctl were read with strace from the same programs (the
kernel's audit record names the call, not its arguments).
Names this architecture lacks (aarch64 has no open, stat, fork, ...) are skipped.
"""

from __future__ import annotations

# name -> where it comes from: "m" measured in the honest corpora (audit_seccomp.py
# --derive), "t" measured in the project's sandbox tests beyond those (--pytest
# --calls-from); otherwise why it is added (a stdlib function an honest program
# may call that maps to it, or the older or *at form of a measured call).
CALLS: dict[str, str] = {
    # Memory.
    "brk": "m", "mmap": "m", "munmap": "m", "mremap": "m", "mprotect": "m", "madvise": "m",
    # Files: the candidate's own tmpfs and the read-only root.
    "read": "m", "write": "m", "pread64": "m", "pwrite64": "os.pwrite",
    "readv": "os.readv", "writev": "os.writev", "lseek": "m", "close": "m",
    "close_range": "m (flags: seccomp.py)", "openat": "m", "newfstatat": "m", "fstat": "os.fstat",
    "statfs": "t", "fstatfs": "os.fstatvfs", "getdents64": "m", "getcwd": "m",
    "chdir": "t", "fchdir": "os.fchdir", "mkdir": "m", "mkdirat": "mkdir's *at form",
    "rmdir": "m", "unlink": "m", "unlinkat": "m", "rename": "m",
    "renameat": "rename's *at form", "renameat2": "os.rename's *at form",
    "readlink": "m", "readlinkat": "readlink's *at form", "access": "m",
    "faccessat": "access's *at form", "faccessat2": "os.access(follow_symlinks=False)",
    "chmod": "m", "fchmod": "os.fchmod", "fchmodat": "chmod's *at form",
    "utimensat": "m", "umask": "t", "ftruncate": "m",
    "truncate": "os.truncate", "fsync": "m", "fdatasync": "os.fdatasync",
    "sendfile": "m", "dup": "os.dup", "dup2": "m", "dup3": "os.dup2(inheritable=False)",
    "pipe2": "m", "fcntl": "m (commands: FCNTL_COMMANDS)",
    "ioctl": "m (requests: IOCTL_REQUESTS)",
    # Waiting and time.
    "poll": "m", "ppoll": "poll's other form", "select": "select.select",
    "pselect6": "select's other form", "epoll_create1": "m", "epoll_ctl": "m",
    "epoll_wait": "m", "epoll_pwait": "epoll_wait's other form", "futex": "m",
    "clock_gettime": "m", "clock_getres": "time.get_clock_info",
    "gettimeofday": "the vDSO's fallback", "clock_nanosleep": "m",
    "nanosleep": "clock_nanosleep's older form", "sched_yield": "os.sched_yield",
    # Threads and signals, within the candidate's own PID namespace.
    "clone": "m (flags: seccomp.py)", "set_robust_list": "m", "rseq": "m",
    "set_tid_address": "m", "exit": "m", "exit_group": "m", "gettid": "m",
    "getpid": "m", "getppid": "t", "getuid": "m", "geteuid": "m", "getgid": "m",
    "getegid": "m", "getrandom": "m", "rt_sigaction": "m", "rt_sigprocmask": "m",
    "rt_sigreturn": "t", "sigaltstack": "t", "kill": "t", "tgkill": "signal.raise_signal",
    "alarm": "signal.alarm", "setitimer": "signal.setitimer",
    "getitimer": "signal.getitimer", "prlimit64": "m", "getrusage": "resource.getrusage",
    "times": "os.times", "sched_getaffinity": "t (read only)", "uname": "m", "sysinfo": "m",
    # Sockets: the inherited channel and socketpair(AF_UNIX) only, sendto without
    # an address (seccomp.py). No socket, bind, listen, connect, accept or
    # setsockopt (REFUSED), no sendmsg: every socket a candidate holds has one peer
    # and a send buffer it cannot grow.
    "socketpair": "m (AF_UNIX)", "sendto": "m (no address)", "recvfrom": "m",
    "shutdown": "socket.shutdown", "getsockname": "m", "getpeername": "t",
    "getsockopt": "socket.getsockopt",
    # Processes, for candidates whose Limits allow them (the no-process filter
    # answers fork, vfork and clone without CLONE_THREAD with EAGAIN).
    "vfork": "m", "fork": "os.fork", "execve": "m", "wait4": "m",
    "waitid": "os.waitid", "arch_prctl": "m", "setsid": "t", "setpgid": "os.setpgid",
    "getpgrp": "os.getpgrp", "getpgid": "os.getpgid", "getsid": "os.getsid",
}

# fcntl commands (argument 1, low 32 bits): descriptor flags, status flags and
# duplication. Locks, leases, dnotify, ownership and signals stay refused.
FCNTL_COMMANDS: dict[str, int] = {
    "F_DUPFD_CLOEXEC": 1030, "F_GETFD": 1, "F_SETFD": 2, "F_GETFL": 3,  # measured (strace)
    "F_DUPFD": 0, "F_SETFL": 4,  # fcntl.fcntl(fd, F_SETFL, os.O_NONBLOCK) and the like
}
# ioctl requests (argument 1, low 32 bits): "is this a terminal", blocking mode,
# close-on-exec. No terminal control, no device ioctls.
IOCTL_REQUESTS: dict[str, int] = {
    "TCGETS": 0x5401, "FIONBIO": 0x5421, "FIOCLEX": 0x5451,  # measured (strace)
    "FIONCLEX": 0x5450,  # os.set_inheritable(fd, True)
}
# Extended attributes: answered "not supported" (ENOTSUP) rather than refused, so
# that shutil.copystat and copytree, which ask, go on without them; nothing of a
# candidate's lands in one.
NOT_SUPPORTED: tuple[str, ...] = (
    "getxattr", "lgetxattr", "fgetxattr", "setxattr", "lsetxattr", "fsetxattr",
    "listxattr", "llistxattr", "flistxattr", "removexattr", "lremovexattr", "fremovexattr",
    "getxattrat", "setxattrat", "listxattrat", "removexattrat",
)

# Refused on purpose (by the default action; named here for the audit filter,
# which keeps them refused while it lets other unlisted calls through, for the
# tests and for docs/sandbox.md): kernel attack surface, ways out of the jail,
# and state a candidate can create that outlives it or that other jails see.
REFUSED: tuple[str, ...] = (
    "keyctl", "add_key", "request_key",
    "mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick",
    "move_mount", "open_tree", "open_tree_attr", "mount_setattr", "listmount",
    "statmount", "unshare", "setns", "ptrace", "process_vm_readv", "process_vm_writev",
    "bpf", "perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "userfaultfd", "init_module", "finit_module", "delete_module", "reboot",
    "kexec_load", "kexec_file_load", "swapon", "swapoff",
    # SysV IPC (semaphores held 319 MB of kernel memory) and Linux AIO
    # (io_setup took the host's whole fs.aio-max-nr).
    "shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv", "msgctl",
    "semget", "semop", "semtimedop", "semctl",
    "io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents",
    # Memory no address-space limit sees.
    "memfd_create", "memfd_secret",
    # Channels through state every jail shares.
    "flock", "inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init",
    "fanotify_mark", "mincore", "cachestat", "sendmsg", "sendmmsg",
    # Socket memory that grows with connections (a listener's backlog held 312 MB
    # of queued data for a 64 MiB candidate) or with setsockopt(SO_SNDBUF).
    "bind", "listen", "connect", "accept", "accept4", "setsockopt",
    # A CPU of its own: a candidate keeps its slot's CPU.
    "sched_setaffinity", "sched_setattr", "sched_setscheduler", "sched_setparam",
    "setpriority", "seccomp", "prctl",
)
