"""A sandbox slot: one long-lived, warm worker process of the pool.

Started by the pool (slot_client.SlotClient) as a fresh interpreter running
slot_main.main() with four inherited pipe fds: CONTROL REPORT TESTS RESULTS, normally inside the
bubblewrap jail (jail.py; flag "jail"), else as the pool's user (unsafe=True). At
start it imports what candidates commonly use, enters its namespaces
(isolation.prepare_slot), forks the zygote (zygote.py: every candidate is forked
from it, a process that never held a program), its judge (judge_main.py) and
one "armed" candidate, and says hello. Then, per program:

  pool  --CONTROL--> slot : code, setup, limits, program id   (never the tests)
  slot  --bootstrap--> armed candidate: limits, setup, code; it loads and says
                           hello to the judge
  slot  --> judge : "start"; then the slot arms the next candidate (fork, isolate,
                    wait) while this program runs, so a fork is never on the
                    critical path
  pool  --TESTS----> judge (the slot never reads them); judge --RESULTS--> pool
  judge --> slot  : "reap" / "spawn" (a fresh candidate after a timeout or
                    crash) and "done"; the slot then kills the candidate's process
                    group and, while the next program loads, reaps it, sweeps its
                    uid and removes its working directory
  slot  --REPORT--> pool : when it aborts a program (wall-clock limit, judge
                    died; it then kills the judge and starts a new one), and
                    {"sweep": uid} / {"swept": uid} around a candidate that may
                    start processes: should this slot die, the pool kills what
                    still runs under those uids (lifecycle.kill_uids_from_outside)

Candidates are forked from the warm zygote (about a millisecond, versus tens for
a fresh Python); because the zygote never held a program or a test, a candidate
finds neither a sibling's code nor any test in the memory it inherits. Cleanup
never raises: a tree that will not go makes the slot ask to be replaced
({"recycle": why}) once its programs in flight are done.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import select
import signal
import socket
import time
from typing import Any

from mtrl.envs.sandbox import codec, confinement, isolation, judge_main, lifecycle, zygote
from mtrl.envs.sandbox.tracked_candidate import Candidate
from mtrl.envs.sandbox.types import Limits

_GRACE_S = 1.0  # how long a candidate that hung up may take to finish exiting
JUDGE_MEMORY_BYTES = 4 << 30
_JUDGE_DIED = "the judge process died"


class Slot:
    def __init__(self, report_fd: int, tests_fd: int, results_fd: int,
                 filter_program: bytes = b"", no_process_program: bytes = b""):
        self.report_fd, self.tests_fd, self.results_fd = report_fd, tests_fd, results_fd
        self.isolation = isolation.slot_report()
        # Before any program arrives: candidates come from a process that never held one.
        self.zygote_pid, self.zygote_sock = zygote.start(self.isolation, filter_program,
                                                          no_process_program)
        self.exited: dict[int, tuple[int, Any]] = {}  # reaped early by _reap_orphans
        self.judge_pid = 0
        self.judge_sock: socket.socket | None = None
        self.armed: Candidate | None = None
        self.current: Candidate | None = None
        self.ended: list[Candidate] = []  # dead and reaped: working dirs to remove
        self.dying: list[Candidate] = []  # killed, not yet reaped
        self.recycling = False  # asked the pool to replace this slot
        self.judge_retiring = False  # the judge hit its memory limit: replace it

    # --- processes --------------------------------------------------------------

    def start_judge(self) -> None:
        slot_end, judge_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        gc.freeze()
        pid = os.fork()
        if pid == 0:  # the judge process
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                # stderr stays the slot's (the pool's): a judge crash leaves a traceback.
                fds = confinement.redirect_stdio(devnull, 2, [
                    judge_end.fileno(), self.tests_fd, self.results_fd])
                resource.setrlimit(resource.RLIMIT_AS, (JUDGE_MEMORY_BYTES, JUDGE_MEMORY_BYTES))
                confinement.become_unprivileged(self.isolation)
                confinement.die_with_parent()
                confinement.harden_trusted_process()
                gc.unfreeze()
                judge_main.serve(*fds)
            finally:
                os._exit(0)
        judge_end.close()
        self.judge_pid, self.judge_sock = pid, slot_end
        self.arm()

    def arm(self) -> None:
        """Has the zygote fork the next candidate; it waits for its program."""
        # In the jail each candidate mounts a tmpfs of its own (no directory to make).
        workdir = "" if self.isolation.filesystem == "jail" else lifecycle.make_workdir()
        judge_side, candidate_side = socket.socketpair()
        # The helper's own line to the judge (two agents): unused otherwise.
        judge_helper_side, helper_side = socket.socketpair()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        boot_slot, boot_candidate = socket.socketpair()
        try:
            pid = zygote.request(self.zygote_sock, workdir,
                                 [candidate_side.fileno(), helper_side.fileno(), out_w, err_w,
                                  boot_candidate.fileno()])
        finally:
            for fd in (out_w, err_w):
                os.close(fd)
            for end in (candidate_side, helper_side, boot_candidate):
                end.close()
        uid = confinement.UID_BASE + pid if self.isolation.users == "per-process-uid" else None
        self.armed = Candidate(pid, boot_slot.detach(), workdir, uid)
        try:
            socket.send_fds(self.judge_sock, [b'{"op":"arm"}'],
                            [judge_side.fileno(), judge_helper_side.fileno(), out_r, err_r])
        except OSError:
            pass  # the judge died: supervise() notices, restart_judge() ends this candidate
        judge_side.close()
        judge_helper_side.close()
        os.close(out_r)
        os.close(err_r)

    def launch(self, program: dict[str, Any]) -> None:
        """Hands the program to the armed candidate, which becomes the current one."""
        chosen, self.armed = self.armed, None
        limits = program["limits"]
        chosen.max_processes = int(limits["max_processes"])
        if chosen.max_processes > 0 and chosen.uid is not None:
            # Before it can fork: its children outlive it if this slot is killed.
            codec.write_fd_frame(self.report_fd, {"sweep": chosen.uid})
        rlimits = [limits["cpu_s"], limits["memory_bytes"], limits["file_size_bytes"],
                   limits["max_processes"], self._task_base()]
        payload = json.dumps({"rlimits": rlimits, "setup": program["setup"],
                              "code": program["code"],
                              "helper_code": program.get("helper_code", ""),
                              "helper_names": program.get("helper_names", [])}
                             ).encode("utf-8", "surrogatepass")
        try:
            os.write(chosen.bootstrap_fd, codec.HEADER.pack(len(payload)))
            view = memoryview(payload)
            while view:
                view = view[os.write(chosen.bootstrap_fd, view):]
        except OSError:  # it died while armed, before any program: the sandbox's doing
            chosen.setup_failed = True
        self.current = chosen

    def _task_base(self) -> int:
        """In the jail, the tasks already counted against RLIMIT_NPROC (the jail's
        one host uid): its processes as this slot sees them, plus bwrap's outer
        process, minus the slot's own bwrap init (in an outer user namespace), plus
        the candidate armed next.
        A bound, not an exact allowance. 0 elsewhere (limit_processes counts)."""
        if self.isolation.filesystem != "jail":
            return 0
        return confinement.count_tasks(os.getuid()) + 1

    def _wait(self, pid: int, block: bool) -> tuple[int, int, Any] | None:
        if pid in self.exited:
            status, usage = self.exited.pop(pid)
            return pid, status, usage
        done, status, usage = os.wait4(pid, 0 if block else os.WNOHANG)
        return (done, status, usage) if done else None

    def end_current(self, expect_dead: bool, limits: Limits) -> list[str]:
        """Kills the current candidate's process group; says how it had ended."""
        chosen, self.current = self.current, None
        if chosen is None:
            return ["error", "CandidateGone", "no candidate process"]
        deadline = time.monotonic() + (_GRACE_S if expect_dead else 0.0)
        outcome = self._wait(chosen.pid, block=False)
        while outcome is None and time.monotonic() < deadline:
            time.sleep(0.001)
            outcome = self._wait(chosen.pid, block=False)
        try:
            os.killpg(chosen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        killed = outcome is None
        if outcome is None:
            outcome = self._wait(chosen.pid, block=True)
        self.ended.append(chosen)
        _, status, usage = outcome
        if chosen.setup_failed:
            return list(lifecycle.SETUP_FAILED)
        return lifecycle.describe_exit(status, usage.ru_utime + usage.ru_stime, limits, killed,
                                       chosen.set_up())

    def cleanup(self) -> None:
        """Sweeps and removes what ended candidates left. Never raises: a failure
        (a tree that will not go) asks the pool to replace this slot once its
        programs in flight are done, so no innocent program pays for it."""
        swept = False
        ended, self.ended = self.ended, []
        for chosen in ended:
            chosen.close()
            try:
                if chosen.max_processes > 0 and chosen.uid is not None:
                    lifecycle.kill_uid(chosen.uid)
                    codec.write_fd_frame(self.report_fd, {"swept": chosen.uid})
                    swept = True
                removed = not chosen.workdir or lifecycle.remove_tree(chosen.workdir)
            except BaseException as error:  # noqa: BLE001 - the slot must live on
                removed, why = False, f"cleanup failed: {type(error).__name__}"
            else:
                why = f"could not remove the working directory {chosen.workdir}"
            if not removed:
                self.recycle(why)
        self._reap_orphans(_GRACE_S if swept else 0.0)

    def recycle(self, why: str) -> None:
        if not self.recycling:
            self.recycling = True
            try:
                codec.write_fd_frame(self.report_fd, {"recycle": why})
            except OSError:
                pass

    def _reap_orphans(self, wait_s: float) -> None:
        """Reaps orphans (the slot is a child subreaper: a candidate's escaped
        descendants land here); waits up to `wait_s` for killed ones to exit."""
        tracked = {self.judge_pid, self.zygote_pid} | {c.pid for c in (self.armed, self.current, *self.dying)
                                      if c}
        deadline = time.monotonic() + wait_s
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid in tracked:
                self.exited[pid] = (status, usage)
            elif pid == 0:
                if time.monotonic() >= deadline or not self._untracked_children(tracked):
                    return
                time.sleep(0.001)

    @staticmethod
    def _untracked_children(tracked: set[int]) -> bool:
        me = os.getpid()
        try:
            with open(f"/proc/{me}/task/{me}/children") as handle:
                return any(int(pid) not in tracked for pid in handle.read().split())
        except OSError:
            return False

    def restart_judge(self, reaped: bool = False) -> None:
        """reaped: the old judge was waited for already (judge_abort)."""
        if not reaped:
            try:
                os.kill(self.judge_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._wait(self.judge_pid, block=True)
        self.judge_retiring = False
        self.judge_sock.close()
        if self.armed is not None:  # its socket went down with the old judge
            self.armed.close()  # end of input: it exits
            try:
                os.killpg(self.armed.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self._wait(self.armed.pid, block=True)
            self.ended.append(self.armed)
            self.armed = None
        self.start_judge()

    # --- one program --------------------------------------------------------------

    def run(self, program: dict[str, Any]) -> None:
        limits = Limits(**program["limits"])
        # The previous program's candidate is reaped (and with it the kernel frees
        # its namespaces and tmpfs) before this program's clock starts: cleaning
        # up never eats into another program's deadline.
        self.finish_dying()
        deadline = time.monotonic() + limits.wall_s_total
        self.launch(program)
        started = self._tell_judge(json.dumps({"op": "start", "id": program["id"],
                                               "limits": program["limits"]}).encode())
        self.arm()
        abort = self.supervise(program, limits, deadline) if started else _JUDGE_DIED
        if self.current is not None:  # killed now, reaped during the next program
            try:
                os.killpg(self.current.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.dying.append(self.current)
            self.current = None
        if abort:
            reaped = abort == _JUDGE_DIED
            if reaped:
                abort = self.judge_abort()
            self.restart_judge(reaped)
            codec.write_fd_frame(self.report_fd, {"id": program["id"], "abort": abort})
        elif self.judge_retiring:
            self.restart_judge()

    def judge_abort(self) -> str:
        """Reaps a judge that hung up mid-program and says why (lifecycle.judge_exit);
        one still alive after a grace period is killed (then: "the judge died")."""
        deadline = time.monotonic() + _GRACE_S
        try:
            outcome = self._wait(self.judge_pid, block=False)
            while outcome is None and time.monotonic() < deadline:
                time.sleep(0.001)
                outcome = self._wait(self.judge_pid, block=False)
            if outcome is None:
                os.kill(self.judge_pid, signal.SIGKILL)
                outcome = self._wait(self.judge_pid, block=True)
        except (ChildProcessError, ProcessLookupError):
            return _JUDGE_DIED
        return lifecycle.judge_exit(outcome[1]) or _JUDGE_DIED

    def shutdown(self) -> None:
        """Ends the judge and the armed candidate and reaps them (no zombies left)."""
        self.finish_dying()
        if self.armed is not None:
            self.armed.close()  # end of input: it exits
            self.dying.append(self.armed)
            self.armed = None
        self.judge_sock.close()  # the judge's loop ends on EOF
        self._wait(self.judge_pid, block=True)
        self.zygote_sock.close()  # so does the zygote's
        try:
            self._wait(self.zygote_pid, block=True)
        except ChildProcessError:
            pass
        self.finish_dying()

    def finish_dying(self) -> None:
        for chosen in self.dying:
            self._wait(chosen.pid, block=True)
            self.ended.append(chosen)
        self.dying.clear()
        self.cleanup()

    def _tell_judge(self, message: bytes) -> bool:
        """Sends to the judge; False when it is dead (the program is then aborted
        and the judge restarted: its death must not take the slot down too)."""
        try:
            self.judge_sock.send(message)
            return True
        except OSError:
            return False

    def supervise(self, program: dict[str, Any], limits: Limits, deadline: float) -> str:
        """Serves the judge until it says done; returns an abort reason or ""."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return f"program wall-clock limit of {limits.wall_s_total} s exceeded"
            ready, _, _ = select.select([self.judge_sock], [], [], remaining)
            if not ready:
                continue
            try:
                data = self.judge_sock.recv(1 << 16)
            except OSError:  # ECONNRESET: it died with messages of ours unread
                data = b""
            if not data:
                return _JUDGE_DIED
            request = json.loads(data)
            op = request.get("op")
            if op == "done":
                self.judge_retiring = bool(request.get("retire"))
                return ""
            if op == "reap":
                status = self.end_current(bool(request.get("expect_dead")), limits)
                if not self._tell_judge(json.dumps({"op": "status", "status": status}).encode()):
                    return _JUDGE_DIED
            elif op == "spawn":
                if self.current is not None:
                    self.end_current(False, limits)
                self.launch(program)
                if not self._tell_judge(b'{"op":"spawned"}'):
                    return _JUDGE_DIED
                self.arm()
