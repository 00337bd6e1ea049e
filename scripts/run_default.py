"""The embedded default experiment from scratch, once per seed, with a summary.

    python scripts/run_default.py --out default.json                 # seed 0
    python scripts/run_default.py --seeds 0,1,2 --out default.json   # three seeds

Each seed is the README's main command (`python -m mtrl.train`, embedded default
config) in its own process and workdir (`--workdir-root/seed<S>`), so seeds cannot
share compiled functions or state and each `minutes` is a whole run from a cold start
(pip install excluded). Runs are sequential: the 2-core machine is the budget.

The JSON holds, per seed, the trainer's summary (`minutes`, `post_sft_success`,
`final_best_success`, `turn1_success`, `turn2_success` at the best checkpoint,
`steps`, `best_checkpoint`, `learning_curve`; `test_success`, the iid test split's
success for the checkpoint validation chose (held-out functions drawn like
validation's), and `post_sft_test_success`, the same split right after SFT;
`ood_test_success` and `post_sft_ood_test_success`, the same on inputs no agent saw
in training) plus `gain` =
final_best_success - post_sft_success and one RL step's time split (median over the
run's steps of rollout, environment and update seconds); and over seeds the mean and the
population standard deviation of each number. For a single seed the top level also
repeats that seed's keys, so `--out` reads the same as the trainer's own `--out`.
"""

from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's mtrl, as the trainer runs
from mtrl.training.logging.metrics import read_metrics  # noqa: E402
from mtrl.training.evidence.seed_runs import (  # noqa: E402
    parse_seed_run_args, run_trainer, step_time_split, write_seed_summary)
from mtrl.training.evidence.seed_stats import stats_over_seeds  # noqa: E402

NUMBERS = ("minutes", "steps", "post_sft_success", "final_best_success", "gain",
           "turn1_success", "turn2_success", "final_turn_success", "post_sft_test_success",
           "test_success", "post_sft_ood_test_success", "ood_test_success",
           "step_rollout_s", "step_env_s", "step_update_s")


def run_seed(seed: int, root: pathlib.Path, overrides: list[str]) -> dict:
    run = run_trainer(seed, root, overrides, cwd=ROOT)
    result = run.summary
    result["wall_minutes_with_startup"] = run.wall_minutes
    result["gain"] = result["final_best_success"] - result["post_sft_success"]
    result.update(step_time_split(read_metrics(run.workdir)))
    result["seed"] = seed
    return result


def main() -> None:
    args = parse_seed_run_args(__doc__.splitlines()[0], workdir_root="workdir/run_default")
    seeds = [int(s) for s in args.seeds.split(",")]
    root = pathlib.Path(args.workdir_root).resolve()
    runs = [run_seed(seed, root, args.override) for seed in seeds]
    summary = {"seeds": seeds, "runs": runs, "over_seeds": stats_over_seeds(runs, NUMBERS),
               "targets_met": {
                   "minutes_le_15": all(r["minutes"] <= 15 for r in runs),
                   "gain_ge_0.25": all(r["gain"] >= 0.25 for r in runs),
                   "turn2_gt_turn1": all(r["turn2_success"] > r["turn1_success"] for r in runs),
               }}
    write_seed_summary(args.out, summary, runs)

    print(f"\n{'seed':>4} {'min':>6} {'steps':>5} {'post_sft':>8} {'best':>6} {'gain':>6} "
          f"{'turn1':>6} {'turn2':>6} {'sft_test':>8} {'test':>6}")
    for r in runs:
        tests = [r.get("post_sft_test_success"), r.get("test_success")]
        print(f"{r['seed']:>4} {r['minutes']:>6.2f} {r['steps']:>5} {r['post_sft_success']:>8.3f} "
              f"{r['final_best_success']:>6.3f} {r['gain']:>6.3f} {r['turn1_success']:>6.3f} "
              f"{r['turn2_success']:>6.3f} "
              + " ".join("     -" if t is None else f"{t:>6.3f}" for t in tests))
    for name, stats in summary["over_seeds"].items():
        print(f"{name:>20}: {stats['mean']:.3f} ± {stats['std']:.3f}")
    print(f"targets: {summary['targets_met']}\nwrote {args.out}")


if __name__ == "__main__":
    main()
