"""Where a finished run's wall time went, from what the run itself logged.

    split = time_split(records, sft_minutes, seconds_at_last_step, total_seconds)

records: metrics.jsonl's lines (read_metrics); sft_minutes: the warm start's minutes
(the LoopState's, SFT and its checks); seconds_at_last_step: the run's seconds when its
last RL step was saved (the LoopState's run_seconds); total_seconds: the whole run's
(run_seconds.json). In minutes:

    sft             sft_minutes
    rl_steps        Σ_t step_time_s                (grow, score, advantages, update)
      rollout, env, update: Σ_t time/rollout_s, time/env_s, time/update_s
    validation      Σ_t time/heldout_eval_s        (after SFT and every eval_interval)
    after_rl        total - seconds_at_last_step - the last step's validation
                    (the test splits for the chosen and the last checkpoint, export,
                    plots: the last step's seconds are taken before its validation)
    other           total - sft - rl_steps - validation - after_rl
                    (the test splits after SFT, checkpoint writes, start-up)

A run logged before validations were timed has validation None and its share in other.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

PARTS = {"rollout": "time/rollout_s", "env": "time/env_s", "update": "time/update_s"}
VALIDATION = "time/heldout_eval_s"


def _sum(records: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [float(r[key]) for r in records if r.get(key) is not None]
    return sum(values) if values else None


def time_split(records: Sequence[Mapping[str, Any]], sft_minutes: float,
               seconds_at_last_step: float, total_seconds: float) -> dict[str, Any]:
    """The module docstring's split, in minutes (None: not logged by that run)."""
    for name, value in (("sft_minutes", sft_minutes),
                        ("seconds_at_last_step", seconds_at_last_step),
                        ("total_seconds", total_seconds)):
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    if seconds_at_last_step > total_seconds:
        raise ValueError(f"seconds_at_last_step {seconds_at_last_step} > total_seconds "
                         f"{total_seconds}")
    minutes = lambda seconds: None if seconds is None else seconds / 60
    steps = [r for r in records if r.get("step_time_s") is not None]
    rl = _sum(steps, "step_time_s") or 0.0
    validation = _sum(records, VALIDATION)
    last = max((int(r["step"]) for r in steps), default=None)
    at_last = _sum([r for r in records if r.get("step") == last], VALIDATION) or 0.0
    after_rl = total_seconds - seconds_at_last_step - at_last
    other = total_seconds - sft_minutes * 60 - rl - (validation or 0.0) - after_rl
    return {"total": total_seconds / 60, "sft": sft_minutes, "rl_steps": rl / 60,
            "rl_step_count": len(steps),
            **{name: minutes(_sum(steps, key)) for name, key in PARTS.items()},
            "validation": minutes(validation),
            "validation_count": sum(1 for r in records if r.get(VALIDATION) is not None),
            "after_rl": after_rl / 60, "other": other / 60}
