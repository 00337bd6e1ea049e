"""A whole RL step (rollout, environment, update) of the embedded default, with the
rollout overlaps (rollout.env_groups, train.off_policy) on and off, in one run.

    python -m bench.rl_step --out rl_step.json [--init-from WORKDIR] [--steps 12]

Arms (config overrides of experiments/configs/default.py):
  sync        rollout.env_groups = 1, train.off_policy = 0   (today's loop)
  env_groups  rollout.env_groups = 3: each task's env work (sandbox runs) is scored
              in the background while the next task's nodes generate
  off_policy  train.off_policy = 1: step k+1's rollout grows while step k's update runs
  both        the two together

Every arm starts from one warm start (--init-from: a finished run's workdir, e.g. an
SFT-only run with train.steps=0; otherwise an SFT of --sft-steps updates per agent made
here first, or none with --sft-steps 0, which leaves a random policy whose programs
rarely parse, so the sandbox has almost nothing to run) and trains --steps RL steps
with the same seed and tasks. Reported per arm: the median over steps 3..steps-1
(first steps compile; the last one evaluates) of the trainer's step_time_s (rollout or
the wait for the background one, environment, update) and its parts, the sum of
step times, the mean reward, and the load average before and after each arm (the
machine is shared: compare arms within one run, --rounds > 1 alternates their order).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import tempfile
import time

from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import load_average, machine_stamp
from mtrl.training.config import module_from_file

ROOT = pathlib.Path(__file__).resolve().parents[1]
ARMS = {
    "sync": {"rollout.env_groups": 1, "train.off_policy": 0},
    "env_groups": {"rollout.env_groups": 3, "train.off_policy": 0},
    "off_policy": {"rollout.env_groups": 1, "train.off_policy": 1},
    "both": {"rollout.env_groups": 3, "train.off_policy": 1},
}
PARTS = ("step_time_s", "time/rollout_s", "time/env_s", "time/update_s",
         "time/rollout_wait_s", "rollout/env_seconds", "rollout/device_seconds")


def default_config():
    c = module_from_file(ROOT / "experiments/configs/default.py").get_config()
    # Timing only: a small held-out check at the last step, no test split, no export.
    c.data.num_eval, c.data.test_split = 6, ""
    c.train.export_best = False
    c.train.budget_minutes = 0.0
    return c


def run(config, workdir: pathlib.Path) -> list[dict]:
    from mtrl.training.loop.trainer import Trainer
    trainer = Trainer(config, workdir, show_progress=False)
    try:
        trainer.run()
    finally:
        trainer.close()
    lines = [json.loads(x) for x in (workdir / "metrics.jsonl").read_text().splitlines()]
    return [r for r in lines if r.get("step", 0) >= 1 and "step_time_s" in r]


def warm_start(args, root: pathlib.Path) -> str:
    if args.init_from:
        return args.init_from
    if not args.sft_steps:
        return ""
    c = default_config()
    c.train.steps = 0
    c.sft.steps = args.sft_steps
    c.sft.first_phase_steps = min(c.sft.first_phase_steps, args.sft_steps * 3 // 4)
    # A warm start for timing, shorter than the default's: its copy check would stop it
    # (sft.check_min_exact), and what is timed does not need it to copy.
    c.sft.check_min_exact = 0.0
    workdir = root / "warm"
    run(c, workdir)
    return str(workdir)


def summarize(records: list[dict], steps: int) -> dict:
    timed = [r for r in records if 3 <= r["step"] <= steps - 1] or records
    out = {"steps_timed": len(timed),
           "step_time_sum_s": sum(r["step_time_s"] for r in records),
           "reward_mean": statistics.fmean(r["reward_mean"] for r in records),
           "staleness": [r.get("off_policy/staleness", 0.0) for r in records]}
    for part in PARTS:
        values = [r[part] for r in timed if part in r]
        if values:
            out[f"median_{part}"] = statistics.median(values)
    # Steps whose update compiled a new packed shape take tens of seconds more; the
    # steady state is the steps that reused a compiled program.
    steady = [r for prev, r in zip(records, records[1:]) if r["step"] >= 3
              and r["train_step_compiles"] == prev["train_step_compiles"]]
    out["steady_steps"] = [r["step"] for r in steady]
    for part in PARTS:
        values = [r[part] for r in steady if part in r]
        if values:
            out[f"steady_median_{part}"] = statistics.median(values)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--init-from", default="")
    parser.add_argument("--sft-steps", type=int, default=0)
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--workdir-root", default="")
    parser.add_argument("--summarize-only", action="store_true",
                        help="re-read the arms' metrics under --workdir-root, run nothing")
    args = parser.parse_args()
    root = pathlib.Path(args.workdir_root or tempfile.mkdtemp(prefix="bench_rl_step_"))
    if args.summarize_only:
        out = {"command": "python -m bench.rl_step --summarize-only --workdir-root "
                          f"{root} --steps {args.steps}", "arms": {}}
        for workdir in sorted(root.glob("*_round*")):
            lines = [json.loads(x) for x in (workdir / "metrics.jsonl").read_text().splitlines()]
            records = [r for r in lines if r.get("step", 0) >= 1 and "step_time_s" in r]
            out["arms"][workdir.name] = summarize(records, args.steps)
        pathlib.Path(args.out).write_text(json.dumps(out, indent=2))
        print(json.dumps(out, indent=2))
        return
    stamp = machine_stamp()
    result = {"command": "python -m bench.rl_step " + " ".join(
                  f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v != ""),
              "arms": {}}
    warm = warm_start(args, root)
    result["init_from"] = warm or None
    names = args.arms.split(",")
    for r in range(args.rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            c = default_config()
            c.train.steps = args.steps
            c.train.eval_interval = c.train.save_interval = args.steps
            c.train.init_from = warm
            c.sft.enabled = bool(warm)  # no warm start: the random policy as it is
            for key, value in ARMS[name].items():
                section, field = key.split(".")
                c[section][field] = value
            started = time.perf_counter()
            load = load_average()
            records = run(c, root / f"{name}_round{r}")
            summary = summarize(records, args.steps)
            summary.update(wall_s=time.perf_counter() - started, load_before=load,
                           load_after=load_average())
            result["arms"].setdefault(name, []).append(summary)
            print(name, json.dumps(summary), flush=True)
    base = statistics.median(s["median_step_time_s"] for s in result["arms"]["sync"]) \
        if "sync" in result["arms"] else None
    for name, runs in result["arms"].items():
        median = statistics.median(s["median_step_time_s"] for s in runs)
        result.setdefault("median_step_time_s", {})[name] = median
        if base:
            result.setdefault("speedup_vs_sync", {})[name] = base / median
    write_record(args.out, result, stamp)
    print(json.dumps({k: result[k] for k in ("median_step_time_s", "speedup_vs_sync")
                      if k in result}, indent=2))


if __name__ == "__main__":
    main()
