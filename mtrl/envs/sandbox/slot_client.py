"""The pool's side of a slot process: its pipes, frames and result assembly.

Four pipes per slot (see slot.py): CONTROL and TESTS out (program, tests), REPORT
and RESULTS in (slot hello and aborts, judge verdict frames). Everything written
is a length-prefixed JSON frame; reads are non-blocking and reassembled here.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import select
import signal
import subprocess
import sys
import time
import concurrent.futures
from typing import Any

from mtrl.envs.sandbox import isolation, jail, lifecycle
from mtrl.envs.sandbox.isolation import IsolationReport
from mtrl.envs.sandbox.types import (ExecutionResult, Limits, Program, SyntaxErrorInfo,
                                     TestResult)
# Every candidate-derived field of a result goes through it (visible_text.py).
from mtrl.envs.sandbox.visible_text import valid_text

SLOT_START_TIMEOUT_S = 60.0
SLOT_GRACE_S = 10.0  # beyond wall_s_total before the pool declares a slot hung
PIPELINE_DEPTH = 2  # programs handed to one slot ahead of completion
_HEADER_BYTES = 4

# Loads mtrl.envs.sandbox without running mtrl/envs/__init__.py, which pulls in the
# environment stack (threads, logging, ...): whatever a slot imports, every candidate
# fork pays for (page tables, fork hooks).
_SLOT_BOOTSTRAP = (
    "import sys, types, os, mtrl\n"
    "envs = types.ModuleType('mtrl.envs')\n"
    "envs.__path__ = [os.path.join(os.path.dirname(mtrl.__file__), 'envs')]\n"
    "sys.modules['mtrl.envs'] = mtrl.envs = envs\n"
    "from mtrl.envs.sandbox import slot_main\n"
    "slot_main.main(sys.argv)\n"
)


class SlotBroken(RuntimeError):
    """The slot process died, hung or broke protocol; it must be replaced."""


class SlotUnhealthy(SlotBroken):
    """The finished program is fine, but the slot's streams are not: replace it."""


class _Frames:
    """Reassembles length-prefixed JSON frames from a non-blocking pipe."""

    def __init__(self):
        self.buffer = bytearray()

    def feed(self, chunk: bytes) -> list[Any]:
        self.buffer += chunk
        frames = []
        while len(self.buffer) >= _HEADER_BYTES:
            size = int.from_bytes(self.buffer[:_HEADER_BYTES], "big")
            if len(self.buffer) < _HEADER_BYTES + size:
                break
            payload = bytes(self.buffer[_HEADER_BYTES:_HEADER_BYTES + size])
            del self.buffer[:_HEADER_BYTES + size]
            try:
                frames.append(json.loads(payload))
            except ValueError as error:
                raise SlotBroken(f"malformed frame from a slot: {error}") from None
        return frames


def _frame(message: dict[str, Any]) -> bytes:
    payload = json.dumps(message, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return len(payload).to_bytes(_HEADER_BYTES, "big") + payload


@dataclasses.dataclass
class Job:
    program: Program
    limits: Limits
    future: concurrent.futures.Future
    key: str | None
    id: str = ""
    frames: list = dataclasses.field(default_factory=list)
    submitted: float = 0.0


class SlotClient:
    """The pool's handle on one slot process and its four pipes."""

    def __init__(self, network_namespace: bool = True, jailed: bool = False,
                 filter_program: bytes = b"", no_process_program: bytes = b"",
                 cpu: int | None = None):
        """jailed: start the slot in the bubblewrap jail (jail.py); filter_program:
        the candidates' seccomp filter (seccomp.build_program), b"" for none;
        no_process_program: that filter with the no-process rules, for candidates
        allowed no extra process (seccomp.build_no_process_program); cpu: the CPU
        the slot and all its processes keep to (slot_main.pin_to_cpu), None: any."""
        control_r, self.control_w = os.pipe()
        self.report_r, report_w = os.pipe()
        tests_r, self.tests_w = os.pipe()
        self.results_r, results_w = os.pipe()
        child_fds = (control_r, report_w, tests_r, results_w)
        flags = ([] if network_namespace else ["no-netns"]) + (["jail"] if jailed else [])
        if filter_program:
            flags.append("seccomp=" + filter_program.hex())
        if no_process_program:
            flags.append("noproc=" + no_process_program.hex())
        if cpu is not None:
            flags.append(f"cpu={int(cpu)}")
        inner = [_SLOT_BOOTSTRAP, *map(str, child_fds), *flags]
        launch = jail.Launch(inner, child_fds) if jailed else None
        try:
            if launch is not None:
                self.process = subprocess.Popen(
                    launch.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    env={}, cwd="/", start_new_session=True, **launch.popen_kwargs())
            else:
                self.process = subprocess.Popen(
                    [sys.executable, "-c", *inner],
                    pass_fds=child_fds, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    env=isolation.slot_environment(), cwd="/", start_new_session=True)
        finally:
            for fd in child_fds:
                os.close(fd)
            if launch is not None:
                launch.close()
        for fd in (self.control_w, self.report_r, self.tests_w, self.results_r):
            os.set_blocking(fd, False)
        self.results, self.reports = _Frames(), _Frames()
        self.outgoing: dict[int, bytearray] = {self.control_w: bytearray(),
                                               self.tests_w: bytearray()}
        # Per-run uids whose processes may outlive this slot (slot.py "sweep").
        self.sweep_uids: collections.Counter[int] = collections.Counter()
        self.killed = False
        self.recycle = ""  # why the slot asked to be replaced (slot.py cleanup)

    def slot_pid(self) -> int:
        """The host pid of the slot's Python process (below bwrap's two in the jail)."""
        pid = self.process.pid
        for _ in range(2):
            try:
                with open(f"/proc/{pid}/comm") as handle:
                    if handle.read().strip() != "bwrap":
                        return pid
                with open(f"/proc/{pid}/task/{pid}/children") as handle:
                    pid = int(handle.read().split()[0])
            except (OSError, IndexError, ValueError):
                return pid
        return pid

    def await_hello(self) -> IsolationReport:
        deadline = time.monotonic() + SLOT_START_TIMEOUT_S
        while time.monotonic() < deadline:
            select.select([self.report_r], [], [], deadline - time.monotonic())
            messages = self.reports.feed(self._read(self.report_r))
            if messages:
                if "hello" not in messages[0]:
                    raise SlotBroken(f"unexpected first message: {messages[0]!r:.200}")
                return IsolationReport(**messages[0]["hello"])
        raise SlotBroken("the slot did not start in time")

    @staticmethod
    def _read(fd: int) -> bytes:
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            return b""
        if not chunk:
            raise SlotBroken("the slot process ended")
        return chunk

    def send(self, job: Job) -> None:
        program = job.program
        self.outgoing[self.control_w] += _frame({
            "id": job.id, "code": program.code, "setup": program.setup,
            "helper_code": program.helper_code, "helper_names": list(program.helper_names),
            "limits": dataclasses.asdict(job.limits)})
        self.outgoing[self.tests_w] += _frame({
            "id": job.id, "setup": program.setup, "tests": list(program.tests),
            "entry_point": program.entry_point,
            "candidate_names": list(program.candidate_names)})

    def pump(self, timeout: float, wake_fd: int) -> tuple[list[Any], list[Any]]:
        """One round of I/O: returns (judge frames, slot reports) that arrived."""
        writing = [fd for fd, data in self.outgoing.items() if data]
        readable, writable, _ = select.select(
            [self.report_r, self.results_r, wake_fd], writing, [], max(timeout, 0.0))
        for fd in writable:
            try:
                written = os.write(fd, self.outgoing[fd])
            except BrokenPipeError:
                raise SlotBroken("the slot closed its pipe") from None
            del self.outgoing[fd][:written]
        results = self.results.feed(self._read(self.results_r)) if (
            self.results_r in readable) else []
        reports = self._track(self.reports.feed(self._read(self.report_r))) if (
            self.report_r in readable) else []
        if wake_fd in readable:
            try:
                os.read(wake_fd, 4096)
            except BlockingIOError:
                pass
        return results, reports

    def _track(self, reports: list[Any]) -> list[Any]:
        """Books the slot's "sweep"/"swept" reports; returns the others."""
        others = []
        for message in reports:
            if isinstance(message, dict) and "sweep" in message:
                self.sweep_uids[int(message["sweep"])] += 1
            elif isinstance(message, dict) and "swept" in message:
                self.sweep_uids[int(message["swept"])] -= 1
            elif isinstance(message, dict) and "recycle" in message:
                self.recycle = str(message["recycle"])  # replace once idle
            else:
                others.append(message)
        self.sweep_uids = +self.sweep_uids  # drops uids swept as often as booked
        return others

    def drain_results(self) -> list[Any]:
        frames = []
        while True:
            chunk = self._read(self.results_r)
            if not chunk:
                return frames
            frames += self.results.feed(chunk)

    def kill(self) -> None:
        """Kills the slot's process group, then what runs under its candidates'
        uids: their children may have left the group (setsid) and carry no
        parent-death signal. Idempotent (the fds are closed once only)."""
        if self.killed:
            return
        self.killed = True
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()
        try:  # reports still in the pipe, "sweep" ones included; EOF ends it
            chunk = self._read(self.report_r)
            while chunk:
                self._track(self.reports.feed(chunk))
                chunk = self._read(self.report_r)
        except (SlotBroken, OSError):
            pass
        lifecycle.kill_uids_from_outside(set(self.sweep_uids))
        for fd in (self.control_w, self.report_r, self.tests_w, self.results_r):
            try:
                os.close(fd)
            except OSError:
                pass

    def stop(self, timeout: float = 2.0) -> None:
        try:
            os.close(self.control_w)  # end of input: the slot leaves its loop
        except OSError:
            pass
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        self.kill()


def assemble(program: Program, program_id: str, judge_messages: list[Any], abort: str,
             torn: bool) -> tuple[ExecutionResult, bool]:
    """Builds the ExecutionResult; the bool says whether the slot stays usable."""
    verdicts: dict[int, TestResult] = {}
    syntax_error = None
    healthy = not torn
    acknowledged = False
    done: dict[str, Any] = {}
    infra = ""
    for message in judge_messages:
        if not isinstance(message, dict) or message.get("id") != program_id:
            healthy = False
            continue
        if "ack" in message:
            acknowledged = True
        elif "done" in message:
            done = message
        elif "syntax" in message:
            line, column, text = message["syntax"]
            syntax_error = SyntaxErrorInfo(int(line), int(column), valid_text(text))
        elif "i" in message and 0 <= int(message["i"]) < len(program.tests):
            index = int(message["i"])
            verdicts[index] = TestResult(program.tests[index], valid_text(message["s"]),
                                         valid_text(message["t"]), valid_text(message["m"]),
                                         int(message.get("a", 0)), int(message.get("d", 0)))
            if message.get("infra"):  # the judge's flag, from the slot's report
                infra = valid_text(message["m"])
    if not acknowledged:
        healthy = False  # the tests frame may still sit, whole or torn, in the pipe
    error = "" if done else abort
    if infra and not error:
        error = infra
    if error and not error.startswith("program"):  # wall clock, the judge's CPU limit
        error = f"sandbox failure: {error}"  # not the program's doing: never cached
    tests = []
    for index, source in enumerate(program.tests):
        if index in verdicts:
            tests.append(verdicts[index])
        elif error.startswith("program"):
            tests.append(TestResult(source, "timeout", "Timeout", error))
        else:
            tests.append(TestResult(source, "error", "SandboxError",
                                    error or "the judge gave no verdict for this test"))
    result = ExecutionResult(tests=tuple(tests), syntax_error=syntax_error,
                             stdout=valid_text(done.get("stdout", "")),
                             stderr=valid_text(done.get("stderr", "")),
                             wall_s=float(done.get("wall_s", 0.0)), error=error)
    return result, healthy


def failure_result(program: Program, message: str) -> ExecutionResult:
    return ExecutionResult(
        tests=tuple(TestResult(t, "error", "SandboxError", message) for t in program.tests),
        error=f"sandbox failure: {message}")
