"""Estimate the base model's pass rate on training tasks and keep the learnable band.

    python -m tools.select_learnable_tasks --config=experiments/configs/smollm2_mbpp.py \
        --samples=4 --out=models/smollm2_mbpp_learnable.json [--num_tasks=40] \
        [--start=24 --extend]

For each of the config's train tasks (the first --num_tasks; 0: all), --samples
first-turn answers are sampled from the config's model (its sampling settings, the
config's seed) and scored by its environment; the pass rate is the fraction that solve
the task. Tasks with a rate strictly between 0 and 1 (--band=success), or whose
sampled rewards differ (--band=reward: a shaped reward's signal), are written as the
task-id list that `data.options.train_ids_file` reads (mtrl/data/task_filter.py),
with every rate.
The config's own train_ids_file is ignored here (it is what this script writes).
--start skips the first train tasks; --extend keeps the rates already in --out and
adds the new ones (samples are keyed by each chunk's first task index, so pieces that
start at multiples of --chunk give the rates of one whole run).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
import time

from absl import app, flags
from ml_collections import config_flags

_CONFIG = config_flags.DEFINE_config_file("config", None, "Experiment config file.")
_SAMPLES = flags.DEFINE_integer("samples", 4, "Sampled answers per task.")
_NUM_TASKS = flags.DEFINE_integer("num_tasks", 0, "Train tasks to score (0: all).")
_CHUNK = flags.DEFINE_integer("chunk", 4, "Tasks per rollout call (bounds memory).")
_OUT = flags.DEFINE_string("out", None, "The task-id file to write.")
_START = flags.DEFINE_integer("start", 0, "Train tasks to skip before scoring.")
_EXTEND = flags.DEFINE_bool("extend", False, "Keep the rates already in --out.")
_BAND = flags.DEFINE_enum("band", "success", ["success", "reward"],
                          "Keep tasks with a pass rate in (0, 1), or whose sampled rewards "
                          "differ (for shaped rewards).")


def pass_rates(trainer, tasks, samples: int, chunk: int, first: int = 0
               ) -> tuple[dict[str, float], dict[str, float]]:
    """({task_id: fraction of `samples` first-turn answers that solve it}, {task_id:
    max − min of their rewards}); `first` is the index of tasks[0] in the train split
    (it keys the samples)."""
    import jax
    import numpy as np

    from mtrl.rollout import rollout

    c = trainer.c
    config = dataclasses.replace(trainer.run_config.rollout, num_turns=1, num_generations=samples,
                                 joint_mode="align", termination_threshold=None)
    rates: dict[str, float] = {}
    spreads: dict[str, float] = {}
    key = jax.random.key(trainer.run_config.seed)
    for start in range(0, len(tasks), chunk):
        part = tasks[start:start + chunk]
        tree = rollout(part, c.env, trainer.backend, c.tokenizer, config,
                       jax.random.fold_in(key, first + start), c.turn_format)
        done = np.asarray(tree.turns[0].done, bool).reshape(len(part), -1)
        rewards = np.asarray(tree.turns[0].rewards, np.float64).reshape(len(part), -1)
        for task, row, reward in zip(part, done, rewards):
            rates[str(task.task_id)] = float(row.mean())
            spreads[str(task.task_id)] = float(reward.max() - reward.min())
        band = (sum(0 < r < 1 for r in rates.values()) if _BAND.value == "success"
                else sum(v > 0 for v in spreads.values()))
        print(f"{first + start + len(part)}/{first + len(tasks)} tasks, {band} in the band "
              f"so far", flush=True)
    return rates, spreads


def main(argv) -> None:
    del argv
    from mtrl.data.task_filter import earlier_pass_rates, write_task_ids
    from mtrl.training.loop.trainer import Trainer

    if _OUT.value is None:
        sys.exit("error: --out is required")
    config = _CONFIG.value
    config.data.options = {k: v for k, v in dict(config.data.options).items()
                           if k != "train_ids_file"}
    if _START.value % _CHUNK.value:
        sys.exit(f"error: --start must be a multiple of --chunk ({_CHUNK.value})")
    if _EXTEND.value and _BAND.value == "reward":
        sys.exit("error: --extend keeps pass rates only; score the reward band in one run")
    rates = earlier_pass_rates(_OUT.value, _SAMPLES.value) if _EXTEND.value else {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as workdir:
        trainer = Trainer(config, workdir, show_progress=False)
        try:
            tasks = trainer.c.train_tasks[_START.value:]
            tasks = tasks[:_NUM_TASKS.value] if _NUM_TASKS.value else tasks
            new_rates, spreads = pass_rates(trainer, tasks, _SAMPLES.value, _CHUNK.value,
                                            first=_START.value)
            rates.update(new_rates)
        finally:
            trainer.close()
    kept = write_task_ids(_OUT.value, rates, _SAMPLES.value,
                          reward_spreads=spreads if _BAND.value == "reward" else None,
                          config=config_flags.get_config_filename(flags.FLAGS["config"]),
                          model=config.model.hf_checkpoint or config.model.preset,
                          temperature=float(config.rollout.temperature),
                          seconds=round(time.perf_counter() - started, 1))
    print(json.dumps({"scored": len(rates), "kept": len(kept),
                      "solved_always": sum(r == 1 for r in rates.values()),
                      "solved_never": sum(r == 0 for r in rates.values()),
                      "out": _OUT.value}, indent=2))


if __name__ == "__main__":
    app.run(main)
