"""What a finished run returns (and `--out` writes): the best checkpoint, the
validation numbers that chose it, the test numbers it got, and where things are."""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any, Mapping

import numpy as np

from mtrl.training.logging import summary


def run_record(*, steps: int, minutes: float, invocation_minutes: float,
               best_step: int | None, best_metrics: Mapping[str, float],
               post_sft: Mapping[str, Any], test: Mapping[str, float],
               best_checkpoint: str | None, learning_curve, exported: str | None,
               budget, extra_tests: tuple[str, ...] = (),
               last_test: Mapping[str, float] | None = None,
               provenance: Mapping[str, Any] | None = None,
               updates: tuple[int, int, int] = (0, 0, 0)) -> dict[str, Any]:
    """The summary dict. post_sft: the step-0 record (`post_sft_*` numbers); test: the
    chosen checkpoint's test metrics ({} without a test split); extra_tests: the
    suite's extra test splits, reported as <name>_success beside test_success;
    last_test: the last checkpoint's test metrics (the chosen one's when it is the
    last), reported as last_<name>_success; provenance: the code, config hash and warm
    start the numbers came from (mtrl/training/run/provenance.py); updates:
    update_counts of the run's steps. Beside each split's success at each checkpoint:
    its turn-1 success and feedback gain with its count (<name>_turn1_success,
    <name>_feedback_gain, <name>_feedback_gain_tasks, with the same post_sft_ and
    last_ prefixes; validation's unprefixed)."""
    result = {
        "steps": steps, "minutes": minutes, "invocation_minutes": invocation_minutes,
        "best_step": best_step, "final_best_success": best_metrics.get("heldout_success"),
        "post_sft_success": post_sft.get("post_sft_success"),
        "turn1_success": best_metrics.get("heldout_success_turn1"),
        "turn2_success": best_metrics.get("heldout_success_turn2"),
        "final_turn_success": best_metrics.get("heldout_final_turn_success"),
        "test_success": test.get("test_success"),
        "post_sft_test_success": post_sft.get("post_sft_test_success"),
        "test_metrics": dict(test) or None,
        "best_checkpoint": best_checkpoint,
        "learning_curve": None if learning_curve is None else str(learning_curve),
        "exported_hf": exported,
        "budget_minutes": budget.minutes, "over_budget": budget.exceeded(),
        "updates_run": updates[0], "updates_skipped": updates[1],
        "updates_zero_advantage": updates[2],
    }
    for name in extra_tests:  # e.g. ood_test_success beside test_success
        result[f"{name}_success"] = test.get(f"{name}_success")
        result[f"post_sft_{name}_success"] = post_sft.get(f"post_sft_{name}_success")
    if last_test is not None:
        for name in ("test", *extra_tests):
            result[f"last_{name}_success"] = last_test.get(f"{name}_success")
    _feedback_use(result, "", best_metrics, "heldout")
    _feedback_use(result, "post_sft_", post_sft, "post_sft_heldout")
    for name in ("test", *extra_tests):
        _feedback_use(result, f"{name}_", test, name)
        _feedback_use(result, f"post_sft_{name}_", post_sft, f"post_sft_{name}")
        if last_test is not None:
            _feedback_use(result, f"last_{name}_", last_test, name)
    result["provenance"] = dict(provenance) if provenance is not None else None
    return result


def _feedback_use(result: dict, into: str, metrics: Mapping[str, Any], split: str) -> None:
    """One split's turn-1 success and feedback gain (with its count) at one checkpoint,
    from its evaluation metrics (training/evaluate/feedback_gain.py); None if absent.
    Validation's turn-1 success keeps its older key, turn1_success."""
    for name, key in (("turn1_success", "success_turn1"), ("feedback_gain", "feedback_gain"),
                      ("feedback_gain_tasks", "feedback_gain_tasks")):
        if f"{into}{name}" not in result:
            result[f"{into}{name}"] = metrics.get(f"{split}_{key}")


def feedback_use_rows(result: Mapping[str, Any], extra_tests: tuple[str, ...] = ()
                      ) -> list[tuple[str, Any, Any, Any, Any]]:
    """(label, turn-1 success, Succ@T, feedback gain, its count) per split and
    checkpoint of `run_record`'s dict, for the printed summary."""
    best, last = result.get("best_step"), result.get("last_step")
    rows = [(f"validation, step {best}", result.get("turn1_success"),
             result.get("final_best_success"), result.get("feedback_gain"),
             result.get("feedback_gain_tasks")),
            ("validation, after SFT", result.get("post_sft_turn1_success"),
             result.get("post_sft_success"), result.get("post_sft_feedback_gain"),
             result.get("post_sft_feedback_gain_tasks"))]
    for name in ("test", *extra_tests):
        at = [(f"{name}, step {best}", ""), (f"{name}, after SFT", "post_sft_")]
        if last is not None and last != best:
            at.append((f"{name}, last (step {last})", "last_"))
        rows += [(label, result.get(f"{p}{name}_turn1_success"),
                  result.get(f"{p}{name}_success"), result.get(f"{p}{name}_feedback_gain"),
                  result.get(f"{p}{name}_feedback_gain_tasks")) for label, p in at]
    return [row for row in rows if any(v is not None for v in row[1:])]


def summary_of(result: Mapping[str, Any], test_tasks: int,
               extra_tests: tuple[str, ...] = ()) -> str:
    """The lines printed when the run ends (logging.summary) for `run_record`'s dict."""
    return summary(total_steps=result["steps"], best_step=result["best_step"],
                   best_success=result["final_best_success"],
                   best_checkpoint=result["best_checkpoint"],
                   wall_s=result["invocation_minutes"] * 60,
                   total_wall_s=result["minutes"] * 60,
                   learning_curve=result["learning_curve"],
                   test_success=result["test_success"], test_tasks=test_tasks,
                   exported=result["exported_hf"],
                   post_sft_test_success=result["post_sft_test_success"],
                   extra_tests={name: (result[f"post_sft_{name}_success"],
                                       result[f"{name}_success"]) for name in extra_tests},
                   updates=(result["updates_run"], result["updates_skipped"],
                            result["updates_zero_advantage"]),
                   feedback_use=feedback_use_rows(result, extra_tests))


def update_counts(records: list[dict]) -> tuple[int, int, int]:
    """(ran, skipped, ran on zero advantages only) RL updates over a run's metrics
    records (metrics.jsonl; step 0 is the warm start; a step logged twice keeps its
    last line)."""
    steps = {int(r["step"]): r for r in records if int(r["step"]) >= 1}
    skipped = sum("skipped_update" in r for r in steps.values())
    zero = sum("skipped_update" not in r and r.get("informative_rows", 1.0) == 0
               for r in steps.values())
    return len(steps) - skipped, skipped, zero


def rollout_metrics(tree) -> dict[str, float]:
    """A training tree's logged numbers: the generator's, the mean reward, turn-1
    success and the samples generated."""
    out = dict(tree.metrics)
    out["reward_mean"] = float(np.mean([r.rewards.mean() for r in tree.turns]))
    out["train_success_turn1"] = float(tree.turns[0].done.mean())
    out["rollout/generated_samples"] = float(sum(len(rows) for r in tree.turns
                                                 for rows in r.completions))
    return out


# The whole run's seconds when it last finished (the time after its last checkpoint,
# the test and the export included): a rerun of a finished run adds to it instead of
# restarting from the last checkpoint's run_seconds (the printed total shrank).
RUN_SECONDS_FILE = "run_seconds.json"


def write_run_seconds(workdir: str | os.PathLike, step: int, seconds: float) -> None:
    path = pathlib.Path(workdir) / RUN_SECONDS_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"step": step, "run_seconds": seconds}) + "\n")
    os.replace(tmp, path)


def read_run_seconds(workdir: str | os.PathLike, step: int) -> float:
    """The seconds a finished run recorded at `step` (0.0: none recorded there, or
    unreadable: the checkpoint's run_seconds stand)."""
    try:
        record = json.loads((pathlib.Path(workdir) / RUN_SECONDS_FILE).read_text())
        return float(record["run_seconds"]) if int(record["step"]) == step else 0.0
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0
