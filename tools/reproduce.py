"""Reproduces one registered claim (experiments/claims/<NAME>.py) on several seeds and
records it: JSON in experiments/claims/records/, then RESULTS.md regenerated from the
records (mtrl/evidence/results_index.py), the one place a claim's numbers are restated.

    python -m tools.reproduce --claim multi_vs_single_turn \\
        --out experiments/claims/records/multi_vs_single_turn.json   # the claim's own seeds
    python -m tools.reproduce --claim ... --dry-run     # print the commands only

Per seed one SFT-only warm start is shared by the claim's two arms (the arm runner of
tools/compare_methods.py, mtrl/evidence/arm_runs.py) and by every claim on the same
suite with the same common overrides (<root>/warm/<suite>-<digest>); each arm then runs the claim's
RL steps, validation chooses its checkpoint and the test split is evaluated once for
it. The record (mtrl/evidence/claims.py) holds per arm the overrides and per-seed
values of the claim's metric, the paired difference treatment − baseline over seeds
with its 95% t interval (mtrl/evidence/paired_ci.py) and the verdict by the rule
stated there, beside the prediction the claim file carried before the run.

`--arms multi_turn` runs only the named arms, in that order (one process per seed
and arm can then share a machine's cores), and writes no record: the full command
with `--reuse` afterwards reads the finished runs and writes it.

A smaller scale than the claim's (--steps, --override, e.g. fewer SFT updates) is
allowed and written into the record's `scale`, so a record never passes for a
full-size run it was not.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import time

from mtrl.evidence import results_index
from mtrl.evidence.arm_runs import ArmPlan, run_arm, suite_config, warm_start
from mtrl.evidence.claim_table import update_table
from mtrl.evidence.claims import claim_record, load_claim

ROOT = pathlib.Path(__file__).resolve().parents[1]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claim", required=True, help="a file stem in experiments/claims")
    parser.add_argument("--seeds", default="", help="comma-separated, >= 2 for an interval "
                        "(default: the claim file's seeds; others are recorded under scale)")
    parser.add_argument("--out", default="", help="JSON record (default "
                        "experiments/claims/records/<claim>.json)")
    parser.add_argument("--table", default="",
                        help="also keep the claim's row in this markdown file's marked "
                             "block (default: none; RESULTS.md is regenerated either way "
                             "when the record lands in experiments/claims/records/)")
    parser.add_argument("--steps", type=int, default=0, help="RL steps (0: the claim's)")
    parser.add_argument("--override", action="append", default=[],
                        help="extra key=value for every run (recorded under scale)")
    parser.add_argument("--root", default="workdir/reproduce", help="workdirs go here")
    parser.add_argument("--minutes", type=float, default=0.0, help="each run's budget")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    parser.add_argument("--arms", default="", help="comma-separated arm names to run, in "
                        "this order; no record is written (default: every arm, then the record)")
    parser.add_argument("--reuse", action="store_true",
                        help="keep arm runs that finished with the same command (a stopped "
                             "claim run resumes at its first unfinished arm)")
    return parser.parse_args(argv)


def main(argv=None) -> dict | None:
    args = parse_args(argv)
    claim = load_claim(args.claim)
    try:
        seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else list(claim.seeds)
    except ValueError:
        raise SystemExit(f"--seeds: comma-separated integers, got {args.seeds!r}") from None
    steps = args.steps or claim.steps
    root = pathlib.Path(args.root).resolve() / claim.name
    root.mkdir(parents=True, exist_ok=True)
    overrides = (*claim.common, *args.override)
    digest = hashlib.sha256("\n".join(overrides).encode()).hexdigest()[:10]
    warm_root = pathlib.Path(args.root).resolve() / "warm" / f"{claim.suite}-{digest}"
    plan = ArmPlan(config=suite_config(claim.suite), root=root, steps=steps,
                   eval_interval=min(claim.eval_interval, steps), minutes=args.minutes,
                   overrides=overrides, dry_run=args.dry_run, warm_root=warm_root,
                   reuse=args.reuse)
    arms = claim.arms
    if args.arms:
        by_name = {arm.name: arm for arm in claim.arms}
        unknown = [name for name in args.arms.split(",") if name not in by_name]
        if unknown:
            raise SystemExit(f"--arms: unknown {unknown}; the claim's arms: {list(by_name)}")
        arms = tuple(by_name[name] for name in args.arms.split(","))
    started = time.perf_counter()
    runs = []
    for seed in seeds:
        warm = warm_start(plan, seed)
        for arm in arms:
            runs.append(run_arm(plan, arm.name, arm.overrides, seed, warm))
    if args.dry_run or args.arms:
        if args.arms and not args.dry_run:
            print("--arms: no record written; run without --arms, with --reuse, for it")
        return None
    scale = {"suite": claim.suite, "steps": steps, "claim_steps": claim.steps,
             "common_overrides": list(claim.common), "extra_overrides": list(args.override),
             "claim_seeds": list(claim.seeds),
             "full_size": (steps == claim.steps and not args.override
                           and seeds == list(claim.seeds))}
    # This invocation's time plus the trainer's own time of each arm run it reused.
    minutes = (time.perf_counter() - started) / 60 + sum(
        r.get("minutes") or 0.0 for r in runs if r.get("reused"))
    record = claim_record(claim, seeds, runs, minutes, scale, code=plan.code)
    out = pathlib.Path(args.out or ROOT / "experiments" / "claims" / "records"
                       / f"{claim.name}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    try:
        shown = str(out.resolve().relative_to(ROOT))
    except ValueError:
        shown = str(out)
    wrote = [str(out)]
    if args.table:
        table = pathlib.Path(args.table)
        table.write_text(update_table(table.read_text() if table.exists() else "", record,
                                      shown))
        wrote.append(f"the row in {table}")
    if out.resolve().parent == (ROOT / "experiments" / "claims" / "records").resolve():
        results_index.main(["--write", "--root", str(ROOT)])  # the index reads the record
        wrote.append(results_index.RESULTS)
    d = record["difference"]
    print(f"{claim.name}: {record['metric']} difference {d['mean']} ci95 {d['ci95']} -> "
          f"{record['verdict']}\nwrote {', '.join(wrote)}")
    return record


if __name__ == "__main__":
    main()
