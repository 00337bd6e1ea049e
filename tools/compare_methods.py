"""Compares training methods on one task suite: every arm (a named set of config
overrides) trained for every seed from one shared SFT warm start per seed, then
test success of the checkpoint that validation chose.

    python -m tools.compare_methods --suite default --arms multi_turn,single_turn \\
        --seeds 0,1,2 --steps 30 --minutes 6 --out compare.json
    python -m tools.compare_methods ... --dry-run     # print the commands, run nothing

Per seed S the warm start is one SFT-only run (`train.steps=0`) in
<root>/warm_seed<S>, reused if it already finished; each arm then starts from its
weights (`train.init_from`), so arms differ only by their overrides, and SFT is paid
once per seed (the arm runner, mtrl/evidence/arm_runs.py, is tools/reproduce.py's
too). Arms are plain `--config.*` overrides (ARMS below, or `name=key=value;
key=value` on the command line), so an arm naming a method another branch adds works
once that branch is merged; an arm whose config is rejected is recorded with its
one-line error and the others still run.

Every arm runs the same number of RL steps (--steps): equal steps, not equal time,
is the comparison. --minutes is each run's budget (train.budget_minutes): the
trainer warns past it and the JSON records `over_budget`; nothing is cut.

Writes --out (JSON: per run the trainer's summary, test metrics, median step time,
generated tokens and samples per step; per arm mean and population std over seeds)
and --out with .md (the markdown table).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from mtrl.evidence.arm_runs import ArmPlan, run_arm, suite_config, warm_start
from mtrl.evidence.seed_stats import stats_over_seeds

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Arm -> overrides. With the default's T = 2, G = 4 (no termination) an agent
# generates G + G^2 = 20 samples per task per step; single_turn (T = 1) matches that
# with G = 20.
ARMS = {
    "multi_turn": [],
    "single_turn": ["rollout.num_turns=1", "rollout.num_generations=20"],
    "level_feedback": ["env.feedback_mode=level_feedback"],
    "plain": ["env.feedback_mode=plain"],
    "magrpo": [],
    "mt_grpo": ["credit.estimator=mt_grpo"],
    "termination_off": [],
    "termination_on": ["rollout.termination_threshold=3.8"],  # level reward max 4.0
}
NUMBERS = ("test_success", "test_success_turn1", "test_success_turn2",
           "test_final_turn_success", "post_sft_test_success", "ood_test_success",
           "post_sft_ood_test_success", "validation_success",
           "step_time_s", "generated_tokens_per_step", "generated_samples_per_step",
           "minutes")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="default",
                        help="a config in experiments/configs (name) or a config file path")
    parser.add_argument("--arms", required=True,
                        help=f"comma-separated arms: {', '.join(ARMS)}, or name=key=value;...")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--steps", type=int, default=30, help="RL steps of every arm")
    parser.add_argument("--eval-interval", type=int, default=10)
    parser.add_argument("--minutes", type=float, default=0.0,
                        help="each run's budget in minutes (warned past, never cut; 0: none)")
    parser.add_argument("--jobs", type=int, default=1, help="arm runs at a time")
    parser.add_argument("--root", default="workdir/compare", help="workdirs go here")
    parser.add_argument("--override", action="append", default=[],
                        help="extra key=value for every run (warm starts included)")
    parser.add_argument("--out", required=True, help="JSON output (markdown beside it)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    return parser.parse_args(argv)


def parse_arms(spec: str) -> dict[str, list[str]]:
    arms = {}
    for item in spec.split(","):
        name, _, custom = item.partition("=")
        if custom:
            arms[name] = [kv for kv in custom.split(";") if kv]
        elif name in ARMS:
            arms[name] = ARMS[name]
        else:
            raise SystemExit(f"--arms: unknown arm {name!r}; known: {', '.join(ARMS)} "
                             "(or name=key=value;key=value)")
    return arms


def aggregate(runs: list[dict]) -> dict[str, dict]:
    out = {}
    for arm in dict.fromkeys(r["arm"] for r in runs):
        mine = [r for r in runs if r["arm"] == arm]
        out[arm] = {"runs": len(mine), "failed": [r["error"] for r in mine if "error" in r],
                    **stats_over_seeds(mine, NUMBERS, ("mean", "std", "n"))}
    return out


def markdown(summary: dict) -> str:
    def cell(stats, name, digits=2):
        s = stats.get(name)
        return "-" if s is None else f"{s['mean']:.{digits}f} ± {s['std']:.{digits}f}"
    lines = ["| arm | overrides | test success | test turn 1 | test turn 2 | test final turn "
             "| post-SFT test | validation (best) | step s | tokens / step | samples / step |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for arm, stats in summary["arms"].items():
        overrides = "; ".join(summary["overrides"][arm]) or "(default)"
        if stats["failed"] and len(stats["failed"]) == stats["runs"]:
            lines.append(f"| {arm} | {overrides} | failed: {stats['failed'][0][:120]} |"
                         + " |" * 8)
            continue
        lines.append(
            f"| {arm} | {overrides} | {cell(stats, 'test_success')} | "
            f"{cell(stats, 'test_success_turn1')} | {cell(stats, 'test_success_turn2')} | "
            f"{cell(stats, 'test_final_turn_success')} | {cell(stats, 'post_sft_test_success')} | "
            f"{cell(stats, 'validation_success')} | {cell(stats, 'step_time_s', 1)} | "
            f"{cell(stats, 'generated_tokens_per_step', 0)} | "
            f"{cell(stats, 'generated_samples_per_step', 0)} |")
    return "\n".join(lines) + "\n"


def write(args, config, seeds, arms, runs, started, final: bool) -> str:
    """The JSON and markdown for the runs so far (rewritten after every run, so a
    comparison cut short still leaves its finished runs)."""
    summary = {"suite": str(config), "seeds": seeds, "steps": args.steps,
               "minutes_budget_per_run": args.minutes, "overrides": arms, "complete": final,
               "wall_minutes": (time.perf_counter() - started) / 60,
               "arms": aggregate(runs) if runs else {}, "runs": runs}
    out = pathlib.Path(args.out)
    out.write_text(json.dumps(summary, indent=2))
    table = markdown(summary) if runs else ""
    out.with_suffix(".md").write_text(table)
    return table


def plan_of(args, config: pathlib.Path, root: pathlib.Path) -> ArmPlan:
    return ArmPlan(config=config, root=root, steps=args.steps,
                   eval_interval=args.eval_interval, minutes=args.minutes,
                   overrides=tuple(args.override), dry_run=args.dry_run)


def main(argv=None) -> None:
    args = parse_args(argv)
    config = suite_config(args.suite)
    arms = parse_arms(args.arms)
    seeds = [int(s) for s in args.seeds.split(",")]
    root = pathlib.Path(args.root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    plan = plan_of(args, config, root)
    started = time.perf_counter()
    runs: list[dict] = []
    lock = threading.Lock()

    def one(job):
        arm, overrides, seed = job
        record = run_arm(plan, arm, overrides, seed, warm[seed])
        if not args.dry_run:
            with lock:
                runs.append(record)
                write(args, config, seeds, arms, runs, started, final=False)
        return record

    warm = {}
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for seed, path in zip(seeds, pool.map(lambda s: warm_start(plan, s), seeds)):
            warm[seed] = path
        jobs = [(arm, overrides, seed) for seed in seeds for arm, overrides in arms.items()]
        ordered = list(pool.map(one, jobs))
    if args.dry_run:
        return
    table = write(args, config, seeds, arms, ordered, started, final=True)
    print(table + f"wrote {args.out} and {pathlib.Path(args.out).with_suffix('.md')}")


if __name__ == "__main__":
    main()
