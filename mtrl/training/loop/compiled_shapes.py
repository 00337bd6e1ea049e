"""The shapes a run has compiled, carried in its loop state so that a resumed run pads
every call as the uninterrupted run does (exact resume across the compile freeze).

    record    = compiled_shapes(sampler, update, freeze_at)    JSON data: LoopState.compiled
    restore_compiled(record, sampler, update, step)            a resume from RL step `step`
    freeze_at = freeze_step(record, start)                     the RL step the run freezes at

After RL step `freeze_at` (COMPILE_WARMUP_STEPS of the run, step_metrics.py) the
trainer freezes the sampler and the update: a call then runs padded in the smallest
shape compiled so far that holds it. Which shape that is depends on every shape the
run met before (the warm-up's rollouts, updates and evaluations) and on the largest
packed layout compiled at the freeze, and padding changes floats by rounding. So they
are loop state: the sampler's shapes (ShapeCover.state), the packed update's layouts
(TrainStep.layouts, the largest one included once frozen), the row shapes the freeze
compiles the largest layout of (the update stage's `row_shapes`) and the step of the
freeze. A resumed run takes them back, frozen when it resumes past `freeze_at`;
before it, it keeps warming up until that step. A restored shape compiles again on
its first use (counted in `compiles/*`).

A checkpoint written without them (record None) resumes as before: it freezes after
its invocation's own first COMPILE_WARMUP_STEPS steps, then records that step. A
multi-process run records none: each process's sampler meets its own shapes, and a
checkpoint holds one `extra`.
"""

from __future__ import annotations

from typing import Any

import jax

from mtrl.training.loop.step_metrics import COMPILE_WARMUP_STEPS

FREEZE_AT, SAMPLER, LAYOUTS, ROW_SHAPES = "freeze_at", "sampler", "update_layouts", "update_rows"


def compiled_shapes(sampler, update, freeze_at: int) -> dict[str, Any] | None:
    """The record of what `sampler` (a Sampler) and `update` (the update stage: its
    step_fn and row_shapes) have met; None in a multi-process run (module docstring)."""
    if jax.process_count() > 1:
        return None
    return {FREEZE_AT: int(freeze_at), SAMPLER: sampler.shapes.state(),
            LAYOUTS: update.step_fn.layouts(),
            ROW_SHAPES: sorted(list(map(int, shape)) for shape in update.row_shapes)}


def freeze_step(record: dict | None, start: int) -> int:
    """The RL step after which the run freezes: the record's, else (none recorded: a
    fresh run, or a checkpoint written before the record) COMPILE_WARMUP_STEPS after
    the invocation's first step `start` + 1."""
    return start + COMPILE_WARMUP_STEPS if record is None else int(record[FREEZE_AT])


def restore_compiled(record: dict | None, sampler, update, step: int) -> None:
    """Puts a record's shapes back into `sampler` and `update` (nothing for None),
    frozen when RL step `step` is at or past the record's freeze."""
    if record is None:
        return
    sampler.shapes.restore(record[SAMPLER])
    update.step_fn.restore_layouts(record[LAYOUTS])
    update.row_shapes.clear()
    update.row_shapes.update(tuple(map(int, shape)) for shape in record[ROW_SHAPES])
    if step >= int(record[FREEZE_AT]):
        sampler.freeze()
        update.step_fn.freeze_layouts()  # the largest layouts are among the restored
