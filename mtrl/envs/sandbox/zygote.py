"""The zygote: the process every candidate of a slot is forked from (class 1, docs/sandbox.md).

The slot forks it at start-up, before it has received any program, and it only
ever receives "start a candidate in this working directory" plus the candidate's
descriptors. So a candidate's inherited memory holds no program and no test: not
a previous candidate's code in a stack frame of the slot (which handles program
text), nor anything freed there.

Where the slot may create namespaces, each candidate is cloned straight into the
namespaces it gets for itself (confinement.candidate_namespaces) as the slot's own
child, which the slot waits for (syscalls.fork_into): its own PID namespace (it is
init there: it sees and signals nothing else, and all it starts dies with it), and
in the jail its own IPC namespace (SysV objects vanish with it) and mount namespace
(a capped tmpfs of its own becomes its /tmp and /dev/shm, freed with it).
Otherwise it is forked through an intermediate that (unshares and) exits at once,
so the slot, a child subreaper, adopts it.

Candidate set-up order, all before the candidate's code: new session, stdio,
mounts, working directory, then credentials (own uid or no capabilities, no new
privileges), then the program arrives, then parent-death signal, rlimits and the
seccomp filter (seccomp.py), then it tells the slot it is set up
(lifecycle.SET_UP, on its bootstrap socket), then candidate.serve. A helper
(two agents) is forked during that set-up and confines itself at once, but its
code waits behind a gate that main opens only after SET_UP is on the slot's
socket: no code of the program runs while main's set-up could still fail, so
nothing the program does (a signal, prlimit on main) can make it fail.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import socket
from typing import Sequence

from mtrl.envs.sandbox import (candidate, codec, confinement, isolation, lifecycle, seccomp,
                               syscalls)

_MESSAGE_BYTES = 4096
_GATE_OPEN = b"+"  # main to its helper: set up, the helper's code may load


def start(report: isolation.IsolationReport, filter_program: bytes,
          no_process_program: bytes = b"") -> tuple[int, socket.socket]:
    """Forks the zygote; returns (its pid, the slot's end of its socket).

    filter_program: every candidate's seccomp filter; no_process_program: that
    filter with the no-process rules, for candidates whose limits allow no extra
    process (seccomp.py)."""
    slot_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    gc.freeze()
    pid = os.fork()
    if pid == 0:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            (sock_fd,) = confinement.redirect_stdio(devnull, 2, [zygote_end.fileno()])
            confinement.die_with_parent()
            confinement.harden_trusted_process()
            serve(socket.socket(fileno=sock_fd), report, (filter_program, no_process_program))
        finally:
            os._exit(0)
    zygote_end.close()
    return pid, slot_end


def request(sock: socket.socket, workdir: str, fds: Sequence[int]) -> int:
    """Asks the zygote for a candidate (fds: its socket, its helper's socket,
    stdout, stderr, bootstrap read end); returns its pid. Raises OSError when the
    zygote cannot."""
    socket.send_fds(sock, [json.dumps({"workdir": workdir}).encode()], list(fds))
    answer = sock.recv(32)
    if not answer or not answer.isdigit() or int(answer) <= 0:
        raise OSError("the zygote could not start a candidate")
    return int(answer)


def serve(sock: socket.socket, report: isolation.IsolationReport,
          filters: tuple[bytes, bytes]) -> None:
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, _MESSAGE_BYTES, 5)
        except OSError:
            return
        if not message:
            return
        pid = 0
        try:
            if len(fds) == 5:
                pid = _spawn(report, json.loads(message)["workdir"], fds, filters)
        except (OSError, ValueError, KeyError):
            pid = 0
        for fd in fds:
            os.close(fd)
        sock.send(str(pid).encode())


def _spawn(report: isolation.IsolationReport, workdir: str, fds: list[int],
           filters: tuple[bytes, bytes]) -> int:
    if report.pid_namespace:
        # One clone straight into the candidate's namespaces, as the slot's child.
        pid = syscalls.fork_into(confinement.candidate_namespaces(report))
        if pid == 0:
            try:
                _become_candidate(report, workdir, fds, filters)
            finally:
                os._exit(lifecycle.SETUP_FAILED_EXIT)
        if pid is not None:
            return pid
    report_r, report_w = os.pipe()
    middle = os.fork()
    if middle == 0:
        try:
            os.close(report_r)
            if report.pid_namespace:
                confinement.unshare_candidate_namespaces(report)
            child = os.fork()
            if child == 0:
                os.close(report_w)
                _become_candidate(report, workdir, fds, filters)
            os.write(report_w, str(child).encode())
        except BaseException:
            pass
        os._exit(0)
    os.close(report_w)
    answer = os.read(report_r, 32)
    os.close(report_r)
    os.waitpid(middle, 0)
    return int(answer) if answer else 0


def _start_helper(judge_link: socket.socket, helper_link: socket.socket, setup: str,
                  code: str, names: list[str], confine, inbox: candidate.Inbox,
                  boot_fd: int) -> tuple[dict, int]:
    """Forks the helper process (before the main code loads), which serves the
    judge on its own socket; returns the proxies that stand for its functions in
    the main code's namespace (they ask the judge, which relays each call and
    counts it: "main calls aux" is judged from what ran) and the write end of the
    helper's gate.

    The helper confines itself, then waits on the gate: its code loads only once
    main has said it is set up and opened the gate (_open_gate). Before, the
    helper's code ran during main's set-up, and a SIGINT or a prlimit of main's
    RLIMIT_NPROC from it failed that set-up: an uncached "sandbox could not set
    up" verdict for the program's own doing."""
    gate_r, gate_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            judge_link.close()
            os.close(boot_fd)  # main's line to the slot: only main says it is set up
            os.close(gate_w)
            confine()
            if os.read(gate_r, 1) != _GATE_OPEN:  # main's set-up failed: no code runs
                os._exit(0)
            os.close(gate_r)
            candidate.serve(helper_link, setup, code)
        finally:
            os._exit(0)
    os.close(gate_r)
    link = candidate.HelperLink(judge_link, inbox)
    return {name: candidate.HelperFunction(link, name) for name in names}, gate_w


def _open_gate(gate_w: int) -> None:
    """Lets the helper's code load (main is set up); a helper already gone finds
    out on its socket to the judge."""
    if gate_w < 0:
        return
    try:
        os.write(gate_w, _GATE_OPEN)
    except OSError:
        pass
    os.close(gate_w)


def _cpu_limit_reached(signum, frame) -> None:
    os._exit(lifecycle.CPU_LIMIT_EXIT)


def _become_candidate(report: isolation.IsolationReport, workdir: str, fds: list[int],
                      filters: tuple[bytes, bytes]) -> None:
    """The candidate process: isolates itself, waits for its program, serves it."""
    try:
        # Not dumpable from birth: no process (a running candidate, a helper) may
        # open this one's /proc/<pid>/mem while it waits for its program.
        confinement.harden_trusted_process()
        os.setsid()
        sock_fd, helper_fd, out_fd, err_fd, boot_fd = fds
        sock_fd, helper_fd, boot_fd = confinement.redirect_stdio(
            out_fd, err_fd, [sock_fd, helper_fd, boot_fd])
        if report.filesystem == "jail":
            confinement.enter_candidate_mounts()
        elif report.users == "per-process-uid":
            confinement.make_workdir_owned(workdir, confinement.UID_BASE + os.getpid())
            os.chdir(workdir)
        else:
            os.chdir(workdir)
        # Before refuse_sockets(), which replaces socket.socket itself.
        judge_link = socket.socket(fileno=sock_fd)
        helper_link = socket.socket(fileno=helper_fd)
        confinement.become_unprivileged(report)
        if report.network != "netns":
            confinement.refuse_sockets()
        if report.users == "shared-uid" and not report.pid_namespace:
            confinement.guard_signals()
        try:
            program = codec.read_fd_frame(boot_fd)
        except EOFError:  # the slot is gone or shut down: nothing to report
            os._exit(0)
        # Only now: the slot is our parent (cloned as its child, or adopted from
        # the intermediate, which has been reaped by the time the program arrives).
        confinement.die_with_parent()
        cpu_s, memory, file_size, max_processes, task_base = program["rlimits"]
        helper_names = [str(n) for n in program.get("helper_names") or []]
        confinement.set_rlimits(cpu_s, memory, file_size)
        if report.pid_namespace:
            # As init of its namespace the kernel's SIGXCPU would be ignored: exit
            # with the status lifecycle.describe_exit reads as the CPU limit. (The
            # hard limit's SIGKILL, one second later, still ends it regardless.)
            signal.signal(signal.SIGXCPU, _cpu_limit_reached)

        def confine() -> None:  # in the candidate and in its helper
            filter_program, no_process_program = filters
            no_process = bool(no_process_program) and max_processes == 0
            # RLIMIT_NPROC counts threads too; where the no-process filter refuses
            # every fork, the allowance is for threads only.
            threads = confinement.THREAD_ALLOWANCE if no_process else 0
            confinement.limit_processes(report, max_processes + bool(helper_names) + threads,
                                        task_base)
            # One filter either way (an install costs ~0.3 ms of CPU): the
            # no-process one is the base filter plus its rules, exact where NPROC
            # is a bound.
            if no_process:
                seccomp.install(no_process_program)
            elif filter_program:
                seccomp.install(filter_program)

        extra, gate_w = None, -1
        inbox = candidate.Inbox(judge_link)
        if helper_names:  # forked before the process limit, so it cannot fail on it
            extra, gate_w = _start_helper(judge_link, helper_link, program["setup"],
                                          str(program.get("helper_code", "")), helper_names,
                                          confine, inbox, boot_fd)
        helper_link.close()  # main's code never holds the helper's line to the judge
        confine()
        # Set up: from here on any exit is the program's own (lifecycle.SET_UP).
        os.write(boot_fd, lifecycle.SET_UP)
        os.close(boot_fd)
    except BaseException:
        # The sandbox's failure, not the program's: none of its code has run
        # (the helper's waits on its gate, and exits when it closes unopened).
        os._exit(lifecycle.SETUP_FAILED_EXIT)
    try:
        _open_gate(gate_w)  # only now may any of the program's code run
        candidate.serve(judge_link, program["setup"], program["code"], extra, inbox)
    finally:
        os._exit(0)
