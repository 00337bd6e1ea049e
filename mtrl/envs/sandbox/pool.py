"""SandboxPool: a batched, asynchronous front end over warm sandbox slots.

Each of `num_workers` slots (slot.py) is a pre-started Python process with its
own judge; it runs one program at a time in a fresh isolated candidate process.
One pool thread drives each slot and keeps up to PIPELINE_DEPTH programs queued
in it, so the slot starts the next program the moment it finishes one instead
of waiting for a round trip through this process. `submit` returns a Future at
once; `run_batch` submits many and gathers them in order.

A slot that dies, hangs past the running program's wall-clock limit plus a grace
period, or breaks the pipe protocol is killed with its whole process group and
replaced; the program it was running gets a non-pass result whose `error` starts
with "sandbox failure" (never cached), programs queued behind it are resubmitted,
and the pool carries on. A slot that cannot be restarted (RESTART_ATTEMPTS tries)
is given up: its programs go to the other slots, and once no slot is left every
queued and later program gets such a "sandbox failure" result instead of a Future
that never resolves.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import os
import select
import threading
import time
import uuid
import weakref
from typing import Any, Sequence

from mtrl.envs.sandbox import cache as cache_lib
from mtrl.envs.sandbox import jail, seccomp
from mtrl.envs.sandbox.isolation import IsolationReport
from mtrl.envs.sandbox.slot_client import (PIPELINE_DEPTH, SLOT_GRACE_S, Job, SlotBroken,
                                           SlotClient, SlotUnhealthy, assemble, failure_result)
from mtrl.envs.sandbox.types import ExecutionResult, Limits, Program

RESTART_ATTEMPTS = 5
RESTART_BACKOFF_S = 0.5  # between attempts to restart one slot


class SandboxPool:
    """Runs untrusted programs against their tests in warm, isolated slots."""

    def __init__(self, num_workers: int | None = None, limits: Limits = Limits(),
                 cache_path: str | os.PathLike | None = None,
                 use_network_namespace: bool = True, unsafe: bool = False,
                 pin_cpus: bool | None = None):
        """Every slot runs in the bubblewrap jail (jail.py) with candidates under
        the seccomp filter (seccomp.py). Where this host cannot run the jail, the
        pool refuses to start (JailUnavailable, one line saying how to enable it)
        unless unsafe=True: then slots run without it, and every verdict's
        `isolation` line starts with "UNSAFE".

        use_network_namespace=False forces the weaker "socket-refused" network
        fallback (isolation.py) outside the jail: it exists to test that path, not
        to run untrusted code, and needs unsafe=True.

        pin_cpus: slot i and all its processes keep to the i-th CPU this process may
        use (round robin when there are more slots than CPUs): the judge and its
        candidate hand over on one CPU (slot_main.pin_to_cpu; BENCHMARKS.md,
        sandbox). None (the default) pins when the slots cover every such CPU (the
        default num_workers): a smaller pool, such as the one-slot CLI, would put
        every concurrent process's slots on the same first CPUs. False leaves
        placement to the kernel."""
        if num_workers is None:
            num_workers = os.cpu_count() or 1
        if num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        if not isinstance(limits, Limits):
            raise ValueError(f"limits must be a Limits, got {type(limits).__name__}")
        self.limits, self.num_workers = limits, num_workers
        self._cache = cache_lib.ResultCache(cache_path) if cache_path is not None else None
        self._queue: collections.deque[Job] = collections.deque()
        self._lock = threading.Lock()
        self._closed = False
        self.replaced_slots = 0  # slots killed and restarted so far
        self._live = num_workers  # slots not given up (see _retire)
        self._gave_up = ""  # why the last slot was given up
        self._wakers = [os.pipe() for _ in range(num_workers)]
        for read_fd, write_fd in self._wakers:
            os.set_blocking(read_fd, False)
            os.set_blocking(write_fd, False)
        self._slot_args = _slot_arguments(use_network_namespace, unsafe)
        allowed = sorted(os.sched_getaffinity(0))
        if pin_cpus is None:
            pin_cpus = num_workers >= len(allowed)
        self._cpus = [allowed[i % len(allowed)] if pin_cpus else None
                      for i in range(num_workers)]
        starting = [SlotClient(*self._slot_args, cpu=cpu) for cpu in self._cpus]
        try:
            reports = [slot.await_hello() for slot in starting]
        except BaseException:
            for slot in starting:
                slot.kill()
            raise
        jailed = self._slot_args[1]
        self.isolation: IsolationReport = dataclasses.replace(
            reports[0], jail=jail.version() if jailed else "none", unsafe=not jailed)
        self._isolation_line = self.isolation.summary()
        # Cached verdicts are keyed by it: none reached under another isolation
        # (unjailed, another filter) is served here.
        self.cache_isolation = cache_lib.isolation_identity(self._isolation_line,
                                                            self._slot_args[2:])
        self._slots: list[SlotClient] = starting
        self._threads = [threading.Thread(target=self._drive, args=(i,), daemon=True,
                                          name=f"sandbox-slot-{i}") for i in range(num_workers)]
        for thread in self._threads:
            thread.start()
        self._finalizer = weakref.finalize(self, SandboxPool._kill_all, self._slots)

    # --- public API -------------------------------------------------------------

    def submit(self, program: Program, limits: Limits | None = None
               ) -> concurrent.futures.Future[ExecutionResult]:
        """Queues one program; the Future resolves to its ExecutionResult."""
        if not isinstance(program, Program):
            raise ValueError(f"submit expects a Program, got {type(program).__name__}")
        limits = self.limits if limits is None else limits
        if not isinstance(limits, Limits):
            raise ValueError(f"limits must be a Limits, got {type(limits).__name__}")
        future: concurrent.futures.Future[ExecutionResult] = concurrent.futures.Future()
        key = None
        if self._cache is not None:
            key = cache_lib.cache_key(program, limits, self.cache_isolation)
            hit = self._cache.get(key)
            if hit is not None and hit.isolation == self._isolation_line:
                future.set_result(hit)
                return future
        with self._lock:
            if self._closed:
                raise RuntimeError("the SandboxPool is closed")
            gave_up = "" if self._live else self._gave_up
            if not gave_up:
                self._queue.append(Job(program, limits, future, key,
                                       submitted=time.monotonic()))
        if gave_up:
            future.set_result(failure_result(program, gave_up))
            return future
        self._wake()
        return future

    def run_batch(self, programs: Sequence[Program], limits: Limits | None = None
                  ) -> list[ExecutionResult]:
        """Submits every program, then returns their results in order."""
        futures = [self.submit(program, limits) for program in programs]
        return [future.result() for future in futures]

    def close(self) -> None:
        """Finishes queued work, stops every slot; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._wake()
        for thread in self._threads:
            thread.join()
        for slot in self._slots:
            slot.stop()
        for read_fd, write_fd in self._wakers:
            os.close(read_fd)
            os.close(write_fd)
        if self._cache is not None:
            self._cache.close()
        self._finalizer.detach()

    def __enter__(self) -> "SandboxPool":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def slot_pids(self) -> list[int]:
        """Process ids of the live slot processes (for monitoring and tests); each
        leads a process group that holds the whole slot (bwrap and the jail)."""
        return [slot.process.pid for slot in self._slots]

    def slot_python_pids(self) -> list[int]:
        """Host pids of the slots' Python processes (in the jail, below bwrap's):
        the parents of their judges, zygotes and candidates."""
        return [slot.slot_pid() for slot in self._slots]

    # --- slot threads -----------------------------------------------------------

    @staticmethod
    def _kill_all(slots: list[SlotClient]) -> None:
        for slot in slots:
            slot.kill()

    def _wake(self) -> None:
        for _, write_fd in self._wakers:
            try:
                os.write(write_fd, b"x")
            except (BlockingIOError, OSError):
                pass

    def _take(self) -> Job | None:
        with self._lock:
            while self._queue:
                job = self._queue.popleft()
                if _claim(job):
                    return job
            return None

    def _requeue(self, jobs: list[Job]) -> None:
        with self._lock:
            self._queue.extendleft(reversed(jobs))
        self._wake()

    def _replace(self, index: int) -> str:
        """Kills slot `index` and starts another; returns "" or why none started.

        Bounded: a slot that can never start again (no memory, no processes left,
        a broken installation) must not keep the futures of its programs waiting.
        """
        self._slots[index].kill()
        self.replaced_slots += 1
        error = ""
        for attempt in range(RESTART_ATTEMPTS):
            if attempt:
                time.sleep(RESTART_BACKOFF_S)
            slot = None
            try:
                slot = SlotClient(*self._slot_args, cpu=self._cpus[index])
                slot.await_hello()
                self._slots[index] = slot
                return ""
            except Exception as failure:  # noqa: BLE001 - this thread must not die
                error = f"{type(failure).__name__}: {failure}"
                if slot is not None:
                    slot.kill()
        return (f"slot {index} could not be restarted after {RESTART_ATTEMPTS} "
                f"attempts ({error})")

    def _recover(self, index: int, inflight: collections.deque[Job], broken: Job | None,
                 reason: str) -> bool:
        """Replaces slot `index` after a failure; False when it had to be given up.

        broken: the program the slot was running, which gets a sandbox failure;
        the programs queued behind it go back to the queue.
        """
        waiting = list(inflight)
        inflight.clear()
        why = self._replace(index)
        if broken is not None:
            self._finish(broken, failure_result(broken.program, reason))
        if not why:
            self._requeue(waiting)
            return True
        self._retire(why, waiting)
        return False

    def _retire(self, why: str, waiting: list[Job]) -> None:
        """Gives a slot up. Its programs go to the other slots; with none left,
        they and every queued program fail (submit fails later ones at once)."""
        with self._lock:
            self._live -= 1
            self._gave_up = why
            if self._live:
                self._queue.extendleft(reversed(waiting))
                waiting, queued = [], []
            else:
                queued = list(self._queue)
                self._queue.clear()
        self._wake()
        for job in waiting:  # already running
            self._finish(job, failure_result(job.program, why))
        for job in queued:
            if _claim(job):
                self._finish(job, failure_result(job.program, why))

    def _finish(self, job: Job, result: ExecutionResult) -> None:
        result = dataclasses.replace(result, isolation=self._isolation_line)
        if job.key is not None and self._cache is not None and not result.error.startswith(
                "sandbox failure"):
            self._cache.put(job.key, result)
        job.future.set_result(result)

    def _drive(self, index: int) -> None:
        wake_fd = self._wakers[index][0]
        inflight: collections.deque[Job] = collections.deque()
        head_since = time.monotonic()
        while True:
            if self._slots[index].recycle and not inflight:
                why = self._replace(index)  # it could not clean up: a fresh one
                if why:
                    self._retire(why, [])
                    return
                continue
            while len(inflight) < PIPELINE_DEPTH and not self._slots[index].recycle:
                job = self._take()
                if job is None:
                    break
                job.id, job.frames = uuid.uuid4().hex, []  # a resent job starts afresh
                self._slots[index].send(job)
                if not inflight:
                    head_since = time.monotonic()
                inflight.append(job)
            if not inflight:
                if self._closed and not self._queue:
                    return
                select.select([wake_fd], [], [], 1.0)
                try:
                    os.read(wake_fd, 4096)
                except BlockingIOError:
                    pass
                continue
            head = inflight[0]
            deadline = head_since + head.limits.wall_s_total + SLOT_GRACE_S
            try:
                if time.monotonic() > deadline:
                    raise SlotBroken("the slot did not finish a program in time")
                results, reports = self._slots[index].pump(deadline - time.monotonic(), wake_fd)
                finished = self._route(index, inflight, results, reports)
            except SlotUnhealthy:  # finished programs are fine; queued ones go elsewhere
                if not self._recover(index, inflight, None, ""):
                    return
                continue
            except SlotBroken as error:
                inflight.popleft()
                if not self._recover(index, inflight, head, str(error)):
                    return
                continue
            if finished:
                head_since = time.monotonic()

    def _route(self, index: int, inflight: collections.deque[Job], results: list[Any],
               reports: list[Any]) -> bool:
        """Files frames under their programs; completes the head when it is done."""
        by_id = {job.id: job for job in inflight}
        finished = False
        for message in results:
            job = by_id.get(message.get("id")) if isinstance(message, dict) else None
            if job is None:
                raise SlotBroken("a frame for no program in flight")
            job.frames.append(message)
            if "done" in message:
                by_id.pop(job.id, None)
                if job is not inflight[0]:
                    raise SlotBroken("programs finished out of order")
                inflight.popleft()
                result, healthy = assemble(job.program, job.id, job.frames, "", False)
                self._finish(job, result)
                finished = True
                if not healthy:
                    raise SlotUnhealthy()
        for message in reports:
            if not isinstance(message, dict) or "abort" not in message:
                continue
            job = by_id.pop(message.get("id"), None)
            if job is None:
                continue  # a late abort of a program that finished anyway
            if not inflight or job is not inflight[0]:
                raise SlotBroken("an abort for a program that was not running")
            inflight.popleft()
            job.frames += self._slots[index].drain_results()
            torn = bool(self._slots[index].results.buffer)
            result, healthy = assemble(job.program, job.id, job.frames, str(message["abort"]),
                                       torn)
            self._finish(job, result)
            finished = True
            if not healthy:
                raise SlotUnhealthy()
        return finished


def _slot_arguments(network_namespace: bool, unsafe: bool
                    ) -> tuple[bool, bool, bytes, bytes]:
    """SlotClient arguments: (network namespace, jailed, seccomp filter, the
    filter with the no-process rules).

    Raises JailUnavailable (one line, with the fix) when the jail or the filter
    cannot be had and unsafe is False.
    """
    why = jail.probe() if network_namespace else (
        "use_network_namespace=False runs outside the jail")
    try:
        filter_program = seccomp.build_program()
        no_process_program = seccomp.build_no_process_program()
    except (ImportError, OSError, RuntimeError, ValueError) as error:
        filter_program = no_process_program = b""
        why = why or f"the seccomp filter cannot be built ({error}); reinstall mtrl"
    if why and not unsafe:
        raise jail.JailUnavailable(f"{why}; or pass unsafe=True to run untrusted code "
                                   "without the jail")
    return network_namespace, not why, filter_program, no_process_program


def _claim(job: Job) -> bool:
    """Marks a queued job's future running; False if it was cancelled. A job put
    back after its slot broke is running already (and can no longer be cancelled)."""
    return job.future.running() or job.future.set_running_or_notify_cancel()


def run_program(program: Program, limits: Limits | None = None) -> ExecutionResult:
    """One-off convenience: a one-slot pool for a single program."""
    with SandboxPool(num_workers=1, limits=limits or Limits()) as pool:
        return pool.submit(program).result()
