"""One RL step's logged numbers, assembled from what the step's stages returned."""

from __future__ import annotations

import jax

from mtrl.parallel.process_rollout import mean_over_processes
from mtrl.training.checkpoints.run_record import rollout_metrics

# The run's first RL steps, whose sampler and update shapes may compile; then the
# trainer freezes both (Sampler.freeze; UpdateStage.freeze, which also compiles the
# packed update's largest layout, so every later minibatch fits one) and a later call
# runs in the smallest compiled shape that holds it. After them `compiles/sampler` and
# `compiles/update` are 0, unless a sampler call is larger than every one before (a
# longer prompt or more rows than any so far: then it compiles, and is counted), or
# the invocation resumed: it compiles the run's shapes again as it first uses them
# (the shapes are loop state: compiled_shapes.py).
COMPILE_WARMUP_STEPS = 3


def step_metrics(step: int, tree, update, clocks: tuple[float, float, float], *,
                 step_tasks, sampler_compiles: int, staleness: int | None = None,
                 compiles_at_start: tuple[int, int] | None = None) -> dict[str, float]:
    """The update's metrics (or skipped_update), the rollout's (averaged over
    processes), the curriculum's (step_tasks.record), packing, the stage times and the
    compile counts.

    Compiles: `sampler_compiles` and `train_step_compiles` are the run's totals so far
    (this process); with compiles_at_start = (sampler, train step) totals when the step
    began, `compiles/sampler` and `compiles/update` are this step's alone (its rollout,
    scoring and update; an evaluation after the step shows in the totals). After
    warm-up both are 0 (tests/training/loop/test_compile_count.py).

    clocks: (t0, t1, t2) = perf_counter at the step's start, after the rollout, after
    the update. staleness: None when the tree grew now; with train.off_policy the
    background rollout's staleness, and the rollout time is its own device clock."""
    t0, t1, t2 = clocks
    # No update when no row had a loss token (e.g. every completion truncated).
    metrics = ({k: float(v) for k, v in jax.device_get(update.metrics[-1]).items()}
               if update.metrics else {"skipped_update": 1.0})
    metrics.update(mean_over_processes(rollout_metrics(tree)))
    metrics.update(step_tasks.record(step, tree))
    metrics["train_rows"] = float(update.kept)
    metrics["informative_rows"] = float(update.informative)
    metrics.update({f"packing/{k}": v for k, v in update.packing.items()})
    env_s = tree.metrics["rollout/env_seconds"]
    metrics.update({"time/rollout_s": t1 - t0 - env_s, "time/env_s": env_s,
                    "time/update_s": t2 - t1, "step_time_s": t2 - t0,
                    "sampler_compiles": float(sampler_compiles),
                    "train_step_compiles": float(update.compiles)})
    if compiles_at_start is not None:
        sampler_start, update_start = compiles_at_start
        metrics.update({"compiles/sampler": float(sampler_compiles - sampler_start),
                        "compiles/update": float(update.compiles - update_start)})
    if staleness is not None:  # the tree grew in the background: its own clocks
        metrics.update({"off_policy/staleness": float(staleness),
                        "time/rollout_s": tree.metrics["rollout/device_seconds"],
                        "time/rollout_wait_s": t1 - t0})
    return metrics
