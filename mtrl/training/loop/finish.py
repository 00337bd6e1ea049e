"""The end of a run: the learning curve, the export, the test splits for the checkpoint
validation chose and for the last one, the provenance, and the summary `--out` writes
(with the RL updates that ran and were skipped, and the whole run's time, also kept in
run_seconds.json so that a rerun of a finished run adds to it)."""

from __future__ import annotations

import time
from typing import Any

from mtrl.training.checkpoints.run_record import (run_record, summary_of, update_counts,
                                                  write_run_seconds)
from mtrl.training.logging.metrics import read_metrics
from mtrl.training.loop.loop_state import LoopState
from mtrl.training.logging.plots import plot_learning_curve
from mtrl.training.run.provenance import run_provenance, write_provenance


def finish_run(trainer, step: int, started: float, loop: LoopState, budget, before_s: float,
               logger) -> dict[str, Any]:
    """run_record's summary of a finished `trainer` (mtrl.training.loop.trainer.Trainer)
    whose last RL step is `step` (`loop`: its LoopState); prints it on the main process."""
    t = trainer
    best = t.keeper.best_step()
    best_metrics = t.keeper.metrics(best) if best is not None else {}
    png = plot_learning_curve(t.workdir, t.workdir / "learning_curve.png",
                              best_step=best) if t.main else None
    exported = None
    if t.c.from_hf and t.train_config.export_best and best is not None:
        exported = t.export(best)
    provenance = run_provenance(t.config_record, loop.warm_start, loop.code_at_start)
    if t.main:
        write_provenance(t.workdir, provenance)
    test = t.test(best, provenance) if best is not None and t.c.test_tasks else {}
    if test:
        logger.write_reported(best, test)  # not in metrics.jsonl: chooses nothing
    # The last checkpoint's test too: what a run without validation would report.
    last = (t.test(step, provenance, "test_last.json") if best not in (None, step)
            and t.c.test_tasks else test)
    updates = update_counts(read_metrics(t.workdir)) if t.main else (0, 0, 0)
    total_s = before_s + time.perf_counter() - started
    result = run_record(
        steps=step, minutes=total_s / 60,
        invocation_minutes=(time.perf_counter() - started) / 60, best_step=best,
        best_metrics=best_metrics, post_sft=loop.post_sft, test=test,
        best_checkpoint=str(t.keeper.step_directory(best)) if best is not None else None,
        learning_curve=png, exported=exported, budget=budget,
        extra_tests=tuple(t.c.extra_tests), last_test=last, provenance=provenance,
        updates=updates)
    result["last_step"] = step
    if t.main:
        write_run_seconds(t.workdir, step, total_s)  # a rerun adds to the whole run's time
        print(summary_of(result, len(t.c.test_tasks), tuple(t.c.extra_tests)), flush=True)
    return result

