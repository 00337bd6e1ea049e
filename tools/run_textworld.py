"""The TextWorld experiment (experiments/configs/textworld.py) once per seed, with a
summary.

    python -m tools.run_textworld --seeds 0 --out textworld.json
    python -m tools.run_textworld --seeds 0,1,2 --out textworld.json

Each seed is `python -m mtrl.train --config=experiments/configs/textworld.py` in its
own process and workdir (`--workdir-root/seed<S>`), sequentially (the 2-core
machine is the budget). The games are generated once into the cache before the
first seed (`games_minutes`, not part of any seed's `minutes`).

The JSON holds, per seed: `minutes` (the trainer's, SFT and RL), `steps` (RL steps),
`test_win_before_rl` (greedy test win rate right after SFT), `test_win_after_rl`
(the same at the checkpoint validation chose), `validation_win_before_rl` /
`validation_win_best`, one RL step's time split (median seconds in rollout,
environment and update) and the environment's share of the step, and the
environment's own rate: `env_steps_per_s` (StepResults per second of the
rollouts' environment time, memo hits included) and `engine_steps_per_s` (engine commands executed per
second, replays included, measured by playing every test game's walkthrough and
refused commands with a cold engine). Over seeds: mean and population std.
"""

from __future__ import annotations

import pathlib
import sys
import time

from mtrl.training.config.overrides import config_with_overrides
from mtrl.training.logging.metrics import read_metrics
from mtrl.evidence.seed_runs import (
    STEP_TIME_SPLIT, parse_seed_run_args, run_trainer, step_time_split, write_seed_summary)
from mtrl.evidence.seed_stats import stats_over_seeds

ROOT = pathlib.Path(__file__).resolve().parents[1]

CONFIG = "experiments/configs/textworld.py"
NUMBERS = ("minutes", "steps", "test_win_before_rl", "test_win_after_rl",
           "validation_win_before_rl", "validation_win_best", "step_rollout_s", "step_env_s",
           "step_update_s", "env_share_of_step", "env_steps_per_s")


def load_config(overrides: list[str]):
    """The experiment's config with the run's --config.a.b=v overrides applied (the
    trainer's parsing: mtrl/training/config/overrides.py)."""
    return config_with_overrides(ROOT / CONFIG,
                                 [o for o in overrides if o.startswith("--config.")])


def prepare_games(overrides: list[str]) -> dict:
    """Generates (or finds cached) every game of the three splits; measures the
    environment on the test games with cold engines."""
    from mtrl.envs.textworld.env import TextWorldEnv, play
    from mtrl.training.config.readers import read_section
    from mtrl.data.suite import build_suite
    config = load_config(overrides)
    started = time.perf_counter()
    suite = build_suite(read_section(config, "data"), config.seed)
    splits = {s: suite.tasks(s) for s in ("train", "validation", "test")}
    games_minutes = (time.perf_counter() - started) / 60
    env = TextWorldEnv()
    steps, started = 0, time.perf_counter()
    for game in splits["test"]:
        for commands in (game.walkthrough, ("look", "xyzzy", *game.walkthrough)):
            steps += len(play(env, game, commands))
    seconds = time.perf_counter() - started
    engine_steps = env.engine_steps
    env.close()
    return {"games_minutes": games_minutes,
            "games": {s: len(t) for s, t in splits.items()},
            "cold_env_steps_per_s": steps / seconds,
            "engine_steps_per_s": engine_steps / seconds}


def step_numbers(workdir: pathlib.Path, generations: int) -> dict[str, float]:
    records = read_metrics(workdir)
    out = step_time_split(records)
    parts = [out[k] for k in STEP_TIME_SPLIT]
    if all(p is not None for p in parts) and sum(parts) > 0:
        out["env_share_of_step"] = out["step_env_s"] / sum(parts)
    # Environment steps of a rollout: every joint action of every node (J = G, one agent).
    env_s = sum(r.get("rollout/env_seconds") or 0.0 for r in records)
    env_steps = sum(generations * sum(v for k, v in r.items()
                                      if k.startswith("rollout/turn") and k.endswith("_nodes"))
                    for r in records)
    out["env_steps_per_s"] = env_steps / env_s if env_s > 0 and env_steps else None
    return out


def run_seed(seed: int, root: pathlib.Path, overrides: list[str]) -> dict:
    run = run_trainer(seed, root, ["--noprogress", *overrides], cwd=ROOT, config=CONFIG)
    summary = run.summary
    result = {"seed": seed, "minutes": summary["minutes"], "steps": summary["steps"],
              "test_win_before_rl": summary.get("post_sft_test_success"),
              "test_win_after_rl": summary.get("test_success"),
              "validation_win_before_rl": summary.get("post_sft_success"),
              "validation_win_best": summary.get("final_best_success"),
              "best_checkpoint": summary.get("best_checkpoint"),
              "learning_curve": summary.get("learning_curve"),
              "wall_minutes_with_startup": run.wall_minutes}
    result.update(step_numbers(run.workdir, load_config(overrides).rollout.num_generations))
    return result


def main() -> None:
    args = parse_seed_run_args(__doc__.splitlines()[0], workdir_root="workdir/run_textworld")
    seeds = [int(s) for s in args.seeds.split(",")]
    root = pathlib.Path(args.workdir_root).resolve()
    games = prepare_games(args.override)
    print(f"games: {games}", flush=True)
    runs = [run_seed(seed, root, args.override) for seed in seeds]
    summary = {"seeds": seeds, "command": " ".join(sys.argv), "config": CONFIG, **games,
               "runs": runs, "over_seeds": stats_over_seeds(runs, NUMBERS)}
    write_seed_summary(args.out, summary, runs)
    print(f"\n{'seed':>4} {'min':>6} {'steps':>5} {'test_before':>11} {'test_after':>10} "
          f"{'val_best':>8} {'env_share':>9}")
    for r in runs:
        def fmt(x, w):
            return f"{x:>{w}.3f}" if isinstance(x, (int, float)) else f"{'-':>{w}}"
        print(f"{r['seed']:>4} {r['minutes']:>6.2f} {r['steps']:>5} "
              f"{fmt(r['test_win_before_rl'], 11)} {fmt(r['test_win_after_rl'], 10)} "
              f"{fmt(r['validation_win_best'], 8)} {fmt(r.get('env_share_of_step'), 9)}")
    for name, stats in summary["over_seeds"].items():
        print(f"{name:>26}: {stats['mean']:.3f} ± {stats['std']:.3f}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
