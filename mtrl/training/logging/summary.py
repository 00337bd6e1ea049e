"""The few lines printed when a run ends: best step, best success, where it is."""

from __future__ import annotations

import math
import os
from typing import Any, Mapping, Sequence

from mtrl.training.logging.metrics import HELDOUT_SUCCESS
from mtrl.training.logging.progress import format_duration


def summary(*, total_steps: int, best_step: int | None, best_success: float | None,
            best_checkpoint: str | os.PathLike | None, metric: str = HELDOUT_SUCCESS,
            wall_s: float | None = None, final_metrics: Mapping[str, float] | None = None,
            learning_curve: str | os.PathLike | None = None,
            total_wall_s: float | None = None, test_success: float | None = None,
            test_tasks: int | None = None, exported: str | os.PathLike | None = None,
            post_sft_test_success: float | None = None,
            extra_tests: Mapping[str, tuple[float | None, float | None]] | None = None,
            updates: tuple[int, int, int] | None = None,
            feedback_use: Sequence[tuple[str, Any, Any, Any, Any]] = ()) -> str:
    """A short human-readable end-of-run report (no trailing newline).

    wall_s: this invocation's time; total_wall_s: the whole run's, across resumes.
    test_success: the test split's success of the best checkpoint (test_tasks tasks),
    shown beside post_sft_test_success (the warm start's); extra_tests: a suite's
    extra test splits, name -> (after SFT, best checkpoint), e.g. ood_test.
    updates: RL updates (ran, skipped, ran on zero advantages only).
    exported: where the Hugging Face export went.
    feedback_use: (label, turn-1 success, Succ@T, feedback gain, its count) per split
    and checkpoint (run_record.feedback_use_rows; training/evaluate/feedback_gain.py)."""
    if total_steps < 0:
        raise ValueError(f"total_steps must be >= 0, got {total_steps}")
    if (best_step is None) != (best_success is None):
        raise ValueError("best_step and best_success are given together or not at all")
    took = "" if wall_s is None else f" in {format_duration(wall_s)}"
    if total_wall_s is not None and wall_s is not None and total_wall_s > wall_s + 0.5:
        took = f" in {format_duration(total_wall_s)} (this invocation {format_duration(wall_s)})"
    lines = [f"Run finished: {total_steps} steps{took}."]
    if best_step is None:
        lines.append(f"No held-out evaluation was recorded, so there is no best {metric}.")
    else:
        lines.append(f"Best {metric}: {best_success:.4f} at step {best_step}.")
        where = "not saved" if best_checkpoint is None else os.fspath(best_checkpoint)
        lines.append(f"Best checkpoint: {where}")
        if test_success is not None:
            on = f" on {test_tasks} test tasks" if test_tasks else ""
            lines.append(f"Test success: {test_success:.4f}{on} (the step-{best_step} "
                         f"checkpoint){_after_sft(post_sft_test_success)}.")
        for name, (after_sft, final) in (extra_tests or {}).items():
            if final is not None:
                lines.append(f"{name} success: {final:.4f} (the step-{best_step} "
                             f"checkpoint){_after_sft(after_sft)}.")
    if feedback_use:
        lines.append("Feedback use (turn-1 success, Succ@T, feedback gain: a failed turn's "
                     "next turn solved with the observation minus with \"Try again.\", "
                     "over n failed turns):")
        width = max(len(row[0]) for row in feedback_use) + 1
        lines += [f"  {label + ':':<{width}} {_number(turn1)}, {_number(final)}, "
                  f"{_gain(gain, tasks)}" for label, turn1, final, gain, tasks in feedback_use]
    if updates is not None:
        ran, skipped, zero = updates
        line = f"RL updates: {ran} ran, {skipped} skipped"
        if skipped:
            line += " (no informative group, or no trainable token)"
        if zero:
            line += (f"; {zero} of them on zero advantages only (every group's rewards "
                     "equal: the update ran but moved no policy)")
        lines.append(line + ".")
    if exported is not None:
        lines.append(f"Exported (Hugging Face): {os.fspath(exported)}")
    if final_metrics:
        shown = ", ".join(f"{name} {value:.4g}" if math.isfinite(value) else f"{name} nan"
                          for name, value in final_metrics.items())
        lines.append(f"Last logged: {shown}")
    if learning_curve is not None:
        lines.append(f"Learning curve: {os.fspath(learning_curve)}")
    return "\n".join(lines)


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _gain(gain: float | None, tasks: float | None) -> str:
    if tasks is None:
        return "gain not measured"
    return f"gain {'n/a' if gain is None else f'{gain:+.4f}'} (n={int(tasks)})"


def _after_sft(value: float | None) -> str:
    return "" if value is None else f"; after SFT {value:.4f}"
