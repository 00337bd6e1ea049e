"""The embedded default experiment from scratch, once per seed, with a summary.

    python -m tools.run_default --out default.json                 # seed 0
    python -m tools.run_default --seeds 0,1,2 --out default.json   # three seeds
    python -m tools.run_default --seeds 1,2 --adopt 0=DIR --out d.json   # seed 0 ran before

`--adopt S=DIR` takes seed S from a finished run of the main command in DIR (its
summary.json) instead of running it (`--seeds ""` runs none: a record of finished runs,
e.g. seeds run in a snapshot worktree at a pinned commit). Every run of the record,
run now or adopted, must have run under one code state (provenance: commit, dirty
flag, changes) and one config, seed aside (config.json): anything else is refused in
one line naming the seed. `--stopped S=DIR` takes seed S's run that the warm-start
check stopped before RL (its sft.jsonl shows the last check failing in the last
round): it counts with test gains 0 and is listed under `stopped_by_warm_start_check`
(it writes no provenance, so only its config is checked).

Each seed is the README's main command (`python -m mtrl.train`, embedded default
config) in its own process and workdir (`--workdir-root/seed<S>`), so seeds cannot
share compiled functions or state and each `minutes` is a whole run from a cold start
(pip install excluded). Runs are sequential: the 2-core machine is the budget.

The JSON holds, per seed, the trainer's summary (`minutes`, `post_sft_success`,
`final_best_success`, `turn1_success`, `turn2_success` at the best checkpoint,
`steps`, `best_checkpoint`, `learning_curve`; `test_success`, the iid test split's
success for the checkpoint validation chose (held-out functions drawn like
validation's), and `post_sft_test_success`, the same split right after SFT;
`ood_test_success` and `post_sft_ood_test_success`, values outside the training
ranges; `last_test_success` / `last_ood_test_success`, the last checkpoint's) plus
`gain` = final_best_success - post_sft_success, `test_gain` = test_success -
post_sft_test_success (and `last_test_gain`), one RL step's time split (median over the
run's steps of rollout, environment and update seconds), the run's provenance (commit,
dirty flag, config hash, warm-start digest: mtrl/training/run/provenance.py) and its
per-step curve with the digest of the metrics file it came from; and over seeds the
mean, the population standard deviation and, for the test gains, the 95% t interval,
and the correlation of validation and test success over seeds. For a single seed the top level also
repeats that seed's keys, so `--out` reads the same as the trainer's own `--out`.
"""

from __future__ import annotations

import json
import math
import pathlib

from mtrl.training.logging.metrics import read_metrics
from mtrl.evidence.paired_ci import t_interval
from mtrl.evidence.seed_runs import (
    parse_seed_run_args, run_curve, run_trainer, step_time_split, write_seed_summary)
from mtrl.evidence.seed_stats import stats_over_seeds
from mtrl.training.run.provenance import same_origin

ROOT = pathlib.Path(__file__).resolve().parents[1]

NUMBERS = ("minutes", "steps", "post_sft_success", "final_best_success", "gain",
           "turn1_success", "turn2_success", "final_turn_success", "post_sft_test_success",
           "test_success", "test_gain", "last_test_success", "last_test_gain",
           "post_sft_ood_test_success", "ood_test_success", "last_ood_test_success",
           "step_rollout_s", "step_env_s", "step_update_s")
INTERVALS = ("test_gain", "last_test_gain")


def run_seed(seed: int, root: pathlib.Path, overrides: list[str]) -> dict:
    run = run_trainer(seed, root, overrides, cwd=ROOT)
    result = seed_result(run.summary, run.workdir, seed)
    result["wall_minutes_with_startup"] = run.wall_minutes
    return result


def seed_result(summary: dict, workdir: pathlib.Path, seed: int) -> dict:
    """One seed's record: the trainer's summary plus gains, step times and its curve."""
    result = dict(summary)
    result["workdir"] = str(workdir)
    result["gain"] = result["final_best_success"] - result["post_sft_success"]
    for name, test in (("test_gain", "test_success"), ("last_test_gain", "last_test_success")):
        if result.get(test) is not None and result.get("post_sft_test_success") is not None:
            result[name] = result[test] - result["post_sft_test_success"]
    result.update(step_time_split(read_metrics(workdir)))
    result.update(run_curve(workdir))
    result["seed"] = seed
    return result


def adopt(spec: str) -> dict:
    """`S=DIR`: seed S's finished run in DIR (checked with the others by check_one_origin)."""
    seed, _, directory = spec.partition("=")
    workdir = pathlib.Path(directory)
    if not seed.isdigit() or not (workdir / "summary.json").exists():
        raise SystemExit(f"--adopt {spec}: need SEED=DIR with a finished run (DIR/summary.json)")
    summary = json.loads((workdir / "summary.json").read_text())
    return seed_result(summary, workdir, int(seed))


def stopped(spec: str) -> dict:
    """`S=DIR`: seed S's run that its warm-start check stopped before RL (sft.jsonl's last
    check failed in the last round config.sft.check_rounds allows): in the record with
    the check's numbers, test gains 0 (RL never ran, so nothing was gained) and no
    provenance (a stopped run writes none; its config is checked with the others)."""
    seed, _, directory = spec.partition("=")
    workdir = pathlib.Path(directory)
    log, config_file = workdir / "sft.jsonl", workdir / "config.json"
    if not seed.isdigit() or not log.exists() or not config_file.exists():
        raise SystemExit(f"--stopped {spec}: need SEED=DIR with a run's sft.jsonl and "
                         "config.json")
    checks = [json.loads(line) for line in log.read_text().splitlines()
              if line.startswith('{"tag": "sft_check/')]
    rounds = json.loads(config_file.read_text())["sft"]["check_rounds"]
    if not checks or checks[-1]["passed"] or checks[-1]["round"] < rounds:
        raise SystemExit(f"--stopped {spec}: its last warm-start check did not fail in "
                         f"the last round ({rounds}); not a run the check stopped")
    last = checks[-1]
    agent = last["tag"].split("/")[-1]
    return {"seed": int(seed), "workdir": str(workdir), "provenance": None,
            "stopped": (f"{agent} reproduced {last['exact']:.2f} of {int(last['rows'])} "
                        f"held-out demonstrations after {int(last['step'])} SFT updates "
                        f"(below {last['min_exact']:g} after {int(last['round'])} "
                        "continuations): stopped before RL"),
            "test_gain": 0.0, "last_test_gain": 0.0}


def check_one_origin(runs: list[dict]) -> None:
    """SystemExit (one line) unless every run ran under one code state, with one config
    seed aside, and with the seed it is filed under."""
    finished = [run for run in runs if not run.get("stopped")]
    first = finished[0] if finished else runs[0]
    for run in runs:
        config = json.loads((pathlib.Path(run["workdir"]) / "config.json").read_text())
        base = json.loads((pathlib.Path(first["workdir"]) / "config.json").read_text())
        why = None if run.get("stopped") else same_origin(
            run.get("provenance"), {"code": (first.get("provenance") or {}).get("code")
                                    or {"commit": None}})
        if why is None and {**config, "seed": None} != {**base, "seed": None}:
            why = f"its config differs from seed {first['seed']}'s (seed aside)"
        if why is None and config.get("seed") != run["seed"]:
            why = f"it ran seed {config.get('seed')}"
        if why is not None:
            raise SystemExit(f"seed {run['seed']} ({run['workdir']}): {why}")


def over_seeds(runs: list[dict]) -> dict:
    """Mean and std of NUMBERS; the test gains' 95% t intervals; the correlation of
    validation (final_best_success) and test success over seeds."""
    out = {"stats": stats_over_seeds(runs, NUMBERS), "ci95": {}}
    for name in INTERVALS:
        values = [r[name] for r in runs if r.get(name) is not None]
        out["ci95"][name] = list(t_interval(values)[1]) if len(values) >= 2 else None
    pairs = [(r["final_best_success"], r["test_success"]) for r in runs
             if r.get("test_success") is not None]
    if len(pairs) >= 3 and len({p[0] for p in pairs}) > 1 and len({p[1] for p in pairs}) > 1:
        import numpy as np
        out["validation_test_correlation"] = float(np.corrcoef(np.array(pairs).T)[0, 1])
    return out


def main() -> None:
    args = parse_seed_run_args(__doc__.splitlines()[0], workdir_root="workdir/run_default",
                               adopt=True)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    root = pathlib.Path(args.workdir_root).resolve()
    runs = [run_seed(seed, root, args.override) for seed in seeds]
    runs = sorted(runs + [adopt(spec) for spec in args.adopt]
                  + [stopped(spec) for spec in args.stopped], key=lambda r: r["seed"])
    if not runs or len({r["seed"] for r in runs}) != len(runs):
        raise SystemExit("--seeds / --adopt: need at least one run and each seed once")
    check_one_origin(runs)
    seeds = [r["seed"] for r in runs]
    stats = over_seeds(runs)
    test_ci = stats["ci95"].get("test_gain")
    summary = {"seeds": seeds, "runs": runs, "over_seeds": stats["stats"],
               "ci95": stats["ci95"],
               "validation_test_correlation": stats.get("validation_test_correlation"),
               "stopped_by_warm_start_check": [r["seed"] for r in runs if r.get("stopped")],
               "targets_met": {
                   # minutes at whatever load the runs met; the quiet timing is its own run
                   "minutes_le_10": all(r.get("minutes", math.inf) <= 10 for r in runs),
                   "every_test_gain_ge_0.25": all((r.get("test_gain") or 0) >= 0.25
                                                  for r in runs),
                   "mean_test_gain_ge_0.25": bool(runs) and sum(
                       r.get("test_gain") or 0 for r in runs) / len(runs) >= 0.25,
                   "test_gain_ci_above_0": test_ci is not None and test_ci[0] > 0,
               }}
    write_seed_summary(args.out, summary, runs)

    print(f"\n{'seed':>4} {'min':>6} {'steps':>5} {'post_sft':>8} {'best':>6} {'gain':>6} "
          f"{'turn1':>6} {'turn2':>6} {'sft_test':>8} {'test':>6}")
    for r in runs:
        if r.get("stopped"):
            print(f"{r['seed']:>4} {r['stopped']}")
            continue
        tests = [r.get("post_sft_test_success"), r.get("test_success")]
        print(f"{r['seed']:>4} {r['minutes']:>6.2f} {r['steps']:>5} {r['post_sft_success']:>8.3f} "
              f"{r['final_best_success']:>6.3f} {r['gain']:>6.3f} {r['turn1_success']:>6.3f} "
              f"{r['turn2_success']:>6.3f} "
              + " ".join("     -" if t is None else f"{t:>6.3f}" for t in tests))
    for name, numbers in summary["over_seeds"].items():
        print(f"{name:>20}: {numbers['mean']:.3f} ± {numbers['std']:.3f}")
    for name, ci in summary["ci95"].items():
        print(f"{name:>20}: 95% t interval {ci}")
    print(f"targets: {summary['targets_met']}\nwrote {args.out}")


if __name__ == "__main__":
    main()
