"""The judge: runs the (trusted) tests against a candidate it cannot touch.

Verdict integrity, the reasoning. Hostile code can reach everything inside the
process it runs in, so no test runner that shares a process with the candidate
can be trusted, whatever nonces or pipes it uses. The split here:

* The candidate process (candidate.py) loads the untrusted code and answers
  "call f with these arguments" requests. It never receives the tests, the
  expected values or the test source: it is forked from the slot process, which
  never holds test text (tests travel from the pool straight to the judge over a
  pipe the slot never reads), so not even its inherited memory contains them.
* The judge (this module, in the judge process of judge_main.py) runs under its
  own uid, is not dumpable, and executes setup + tests itself. Every name the
  candidate defined is bound here to a `RemoteFunction` (calls go over a socket)
  or to a plain-data copy of its value. Answers come back through codec, which
  rebuilds builtin values only: an object whose __eq__ always holds, a lying int
  subclass or a patched comparison cannot cross. Assertions, comparisons,
  `math.isclose`, HumanEval's `check(candidate)`, loops and helpers in the test
  all run here, with this process's own builtins.
* A test passes only when its code ran to the end in this process without an
  exception before its deadline. Early exits, killing or signalling processes,
  patched builtins or modules in the candidate, printed markers, forged frames:
  at most they change the values the candidate returns or end the candidate
  process, and a dead candidate makes the test an error.

Limits of the argument: a candidate can still return correct values it did not
compute honestly (e.g. hard-coded answers) - that is a property of the tests,
not of the sandbox. Other returned values (a re.Match, a class instance) arrive
as codec.Opaque: the truth value and repr the candidate computed, equal only to
itself. Arguments must be plain data (a lambda argument is a TypeError). Candidate
names never shadow the judge's builtins or names defined by `setup` (except the
entry point and Program.candidate_names), so `def all(x): return True` cannot rig
`assert all(...)`. Candidate classes cannot be instantiated by tests.
Arguments the candidate mutates in place (lists, dicts, sets, bytearrays) are
copied back into the judge's objects after each call.
"""

from __future__ import annotations

import builtins
import collections
import json
import resource
import signal
import time
from typing import Any, Callable

from mtrl.envs.sandbox import codec, lifecycle, prefetch
from mtrl.envs.sandbox.relay import HelperRelay
from mtrl.envs.sandbox.remote import (CandidateError, CandidateGone, CandidateLink,
                                      RemoteFunction, RemoteValueUnavailable, Slot,
                                      copy_back, remote_exception, request_text)
from mtrl.envs.sandbox.types import Limits


class TestTimeout(BaseException):
    """The per-test alarm fired (BaseException: test code's `except Exception` won't eat it)."""


class _alarm_blocked:
    """Alarms stay pending during slot exchanges so that stream never desyncs."""

    def __enter__(self):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})

    def __exit__(self, *exc_info):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGALRM})


def _on_alarm(signum, frame):
    raise TestTimeout()


class Judge:
    """Runs one program's tests against candidate processes provided by the slot."""

    def __init__(self, limits: Limits, slot: Slot, link: CandidateLink,
                 emit: Callable[..., None]):
        self.limits, self.slot, self.emit = limits, slot, emit
        self._link: CandidateLink | None = link
        self._clean = True  # False while an answer is outstanding after an interruption
        self._pending: collections.deque[str] = collections.deque()  # sent, unanswered
        self._upcoming: collections.deque[str] = collections.deque()  # certain, not sent
        self._load_failure: CandidateGone | None = None
        self.calls = 0  # diagnostics
        self.relay = HelperRelay(codec.item_budget(limits.memory_bytes))  # two agents
        self._reply_values: list[Any] = []  # helper values during the call just answered
        self.out_of_memory = False  # a test hit this process's memory limit: retire it
        self.budget_items = codec.item_budget(limits.memory_bytes)
        signal.signal(signal.SIGALRM, _on_alarm)

    # --- candidate lifecycle --------------------------------------------------

    def timed(self, seconds: float, fn: Callable[[], Any]) -> Any:
        """fn() under the per-test alarm, and under a CPU limit for this process a
        second past it: C code (set(range(n)), sum over a huge range) never lets
        the alarm's handler run, so the kernel's SIGXCPU ends the judge instead
        and the slot reports the program's test as a timeout."""
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        soft = int(time.process_time() + seconds) + 2
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
            signal.setitimer(signal.ITIMER_REAL, seconds)
            return fn()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))

    def reap(self, expect_dead: bool) -> CandidateGone:
        """Ends the candidate (if alive); the slot describes how it ended."""
        with _alarm_blocked():
            if self._link is not None:
                self._link.close()
                self._link = None
            self._pending.clear()
            self._upcoming.clear()
            status, error_type, message = self.slot.reap(expect_dead)
        # Only the slot's report can mark the sandbox's own failure (never cached).
        return CandidateGone(str(status), str(error_type), str(message),
                             infra=[status, error_type, message] == lifecycle.SETUP_FAILED)

    def _receive(self) -> Any:
        """The candidate's next message; its calls of the helper meanwhile are
        relayed (two agents, relay.py)."""
        while True:
            try:
                message = json.loads(self._link.receive())
            except (EOFError, OSError) as error:
                raise self.reap(expect_dead=True) from error
            except (ValueError, RecursionError, MemoryError, codec.ProtocolError) as error:
                # RecursionError: JSON nested too deep for the decoder.
                self._clean = False
                raise CandidateError(f"malformed message from the candidate: {error}") from None
            if type(message) is not dict or "aux" not in message:
                self._reply_values = self.relay.reply_arrived()
                return message
            try:
                answer = self.relay.relay(self._link, message)
            except codec.ProtocolError as error:  # the candidate's doing (relay.py)
                self._clean = False
                raise CandidateError(f"malformed message from the candidate: {error}") from None
            self._send(answer)

    def await_hello(self) -> dict[str, Any] | CandidateGone:
        """The candidate's first message (names, or why it could not load), or a
        CandidateGone for what the judge saw itself (timeout, exit, garbage).

        The two are different types on purpose: the hello is the candidate's to
        write, so no key in it may stand for a verdict the judge reached itself
        (a forged {"gone": ["passed", ...]} once passed every test).
        """
        try:
            hello = self.timed(self.limits.wall_s_per_test, self._receive)
        except TestTimeout:
            self.reap(expect_dead=False)
            return CandidateGone("timeout", "Timeout", "candidate code did not finish loading "
                                 f"within {self.limits.wall_s_per_test} s")
        except CandidateGone as gone:
            return gone
        except CandidateError as error:
            self.reap(expect_dead=False)
            return CandidateGone("error", "CandidateError", str(error))
        if type(hello) is not dict:
            return CandidateGone("error", "CandidateError", "malformed hello from the candidate")
        return hello

    def _replace_candidate(self) -> None:
        """A fresh candidate after the previous one died or timed out; runs inside
        the current test's deadline, so reloading counts toward it."""
        if self._load_failure is not None:
            raise self._load_failure
        self.reap(expect_dead=False)
        with _alarm_blocked():
            self._link = self.slot.spawn()
        self._clean = False
        try:
            hello = self._receive()
        except CandidateGone as gone:
            if gone.infra:
                raise
            hello = {}
        except CandidateError:
            hello = {}
        if type(hello) is not dict or "names" not in hello:
            gone = self.reap(expect_dead=False)
            if gone.infra:
                raise gone
            self._load_failure = CandidateGone(
                "error", "CandidateReloadFailed",
                "the candidate could not be reloaded after an earlier test ended it")
            raise self._load_failure
        self._clean = True

    def _ready(self) -> CandidateLink:
        if self._link is None or not self._clean:
            self._replace_candidate()
        return self._link

    def _send(self, payload: bytes) -> None:
        try:
            self._link.send(payload)
        except OSError as error:
            raise self.reap(expect_dead=True) from error

    # --- calls ----------------------------------------------------------------

    def send_batch(self, calls: list[prefetch.StaticCall], first: bool = False) -> None:
        """Queues a test's certain calls (prefetch.py) and sends the first.

        The candidate gets them one at a time (it must never hold a later
        call's arguments): the next one goes out the moment the previous answer
        arrives, so the candidate computes it while the test checks that answer.

        first: sent before the hello, to a candidate that may already have exited
        after reporting why (its hello is still readable); failures are ignored.
        """
        self._upcoming.clear()
        if not calls:
            return
        try:
            texts = [request_text(n, a, k) for n, a, k in calls]
        except TypeError:
            return  # a live call reports it if the test makes that call
        head = texts[0].encode("utf-8", "surrogatepass")
        if first:
            try:
                self._link.send(head)
            except OSError:
                return
        else:
            self._ready()
            self._clean = False
            self._send(head)
        self._pending.append(texts[0])
        self._upcoming.extend(texts[1:])
        self._clean = True

    def _send_next(self) -> None:
        """Sends the next queued certain call once nothing is outstanding."""
        if self._pending or not self._upcoming:
            return
        text = self._upcoming.popleft()
        try:
            self._link.send(text.encode("utf-8", "surrogatepass"))
        except OSError:
            self._upcoming.clear()  # the next call finds the candidate gone
            return
        self._pending.append(text)

    def call(self, name: str, args: tuple, kwargs: dict) -> Any:
        text = request_text(name, args, kwargs)
        self._ready()
        self._clean = False  # until the answer is in: a timeout now leaves it busy
        self.calls += 1
        try:
            position = self._pending.index(text)
        except ValueError:
            self._send(text.encode("utf-8", "surrogatepass"))
            position = len(self._pending)  # answered after every pending one
            self._pending.append(text)
        for _ in range(position):  # answers to prefetched calls the test skipped
            self._receive()
            self._pending.popleft()
        reply = self._receive()
        self._pending.popleft()
        if self._upcoming and self._upcoming[0] == text:
            self._upcoming.popleft()  # made live, ahead of its turn
        self._send_next()
        if type(reply) is not dict or ("r" not in reply and "e" not in reply):
            # Forged or torn frames: the stream is out of step, so the next call
            # gets a fresh candidate.
            raise CandidateError("malformed reply from the candidate")
        self._clean = True
        if "e" in reply:
            type_name, message = (list(reply["e"]) + ["", ""])[:2]
            raise remote_exception(str(type_name), str(message))
        budget = codec.Budget(self.budget_items)  # the reply and mutated arguments together
        try:
            value = codec.from_plain(reply["r"], 0, budget)
            mutated = [(key, codec.from_plain(tree, 0, budget)) for key, tree in reply.get("m", [])]
        except (KeyError, TypeError, ValueError, MemoryError, codec.ProtocolError) as error:
            # MemoryError: rebuilding what the candidate sent (within its item
            # budget) is the candidate's doing, never the judge's own failure.
            raise CandidateError("malformed reply from the candidate: "
                                 f"{error or type(error).__name__}") from None
        for key, new in mutated:
            if type(key) is int and 0 <= key < len(args):
                copy_back(args[key], new)
            elif type(key) is str and key in kwargs:
                copy_back(kwargs[key], new)
        self.relay.judge_reply(self._reply_values, reply["r"], value)
        return value

    # --- tests ----------------------------------------------------------------

    def bind(self, namespace: dict[str, Any], names: dict[str, Any],
             overridable: set[str]) -> CandidateGone | None:
        """Binds the candidate's names under the per-test timer (a forged hello may
        hold values that are slow to build: hash-colliding keys); None when done,
        else the verdict for every test."""
        try:
            self.timed(self.limits.wall_s_per_test,
                       lambda: self._bind(namespace, names, overridable))
        except TestTimeout:
            return CandidateGone("timeout", "Timeout", "decoding the candidate's names "
                                 f"exceeded {self.limits.wall_s_per_test} s")
        return None

    def _bind(self, namespace: dict[str, Any], names: dict[str, Any],
              overridable: set[str]) -> None:
        """Builtins and setup names win unless overridable."""
        budget = codec.Budget(self.budget_items)  # all of the hello's values together
        protected = (set(namespace) | set(dir(builtins))) - overridable
        for name, info in names.items():
            if not isinstance(name, str) or name.startswith("__") or name in protected:
                continue
            info = info if type(info) is list else []  # the hello is the candidate's
            kind = info[0] if info else None
            if kind == "function":
                namespace[name] = RemoteFunction(self, name)
            elif kind == "value":
                try:
                    namespace[name] = codec.from_plain(info[1], 0, budget)
                except codec.ProtocolError as error:  # beyond the budget: say so on use
                    namespace[name] = RemoteValueUnavailable(name, str(error)[:200])
                except Exception:  # noqa: BLE001 - e.g. {"$range": [0, 1, 0]}: not bound
                    continue
            else:
                namespace[name] = RemoteValueUnavailable(name, str(info[1:2])[:100])

    def run_test(self, index: int, body: Callable[[], None],
                 calls: list[prefetch.StaticCall]) -> None:
        status, error_type, message, infra = "passed", "", "", False
        returned, derived = self.relay.returned, self.relay.derived

        def prefetched_body() -> None:
            self.send_batch(calls)
            body()

        try:
            self.timed(self.limits.wall_s_per_test, prefetched_body)
        except TestTimeout:
            status, error_type = "timeout", "Timeout"
            message = f"test exceeded {self.limits.wall_s_per_test} s"
        except CandidateGone as gone:
            status, error_type, message = gone.status, gone.error_type, str(gone)
            infra = gone.infra
        except AssertionError as error:
            status, error_type, message = "failed", "AssertionError", str(error)
        except MemoryError as error:
            status, error_type = "error", "MemoryError"
            if hasattr(error, "mtrl_error_type"):  # the candidate's, relayed (remote.py)
                message = str(error)  # a failed test like any other, cached
            else:  # raised here: the judge's own limit, or the host's memory
                self.out_of_memory = infra = True  # replaced after this program, not cached
                message = f"the judge ran out of memory running this test {error}".strip()
        except BaseException as error:
            status = "error"
            error_type = getattr(error, "mtrl_error_type", type(error).__name__)
            message = str(error)
        extra: dict[str, int] = {"infra": 1} if infra else {}
        if self.relay.returned > returned:  # helper calls that returned a value
            extra["a"] = self.relay.returned - returned
        if self.relay.derived > derived:  # main's answers of its own beside them
            extra["d"] = self.relay.derived - derived
        self.emit(i=index, s=status, t=error_type, m=message, **extra)

    def fail_all(self, count: int, status: str, error_type: str, message: str,
                 infra: bool = False) -> None:
        for index in range(count):
            self.emit(i=index, s=status, t=error_type, m=message,
                      **({"infra": 1} if infra else {}))

    def finish(self) -> None:
        if self._link is not None:
            self._link.close()
            self._link = None
