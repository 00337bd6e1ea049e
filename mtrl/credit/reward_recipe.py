"""Reward recipe for tool-using and agent tasks, in which the outcome must dominate.

docs/design.md section 4: an episode's reward is

  total = outcome + step + invalid + progress
  outcome  = success_reward if the task succeeded else failure_reward   (±1 by default)
  step     = −step_penalty · turns taken
  invalid  = −invalid_tool_penalty · invalid tool calls
  progress = progress_coef · clip(progress, 0, 1)   (optional shaping: subgoal fraction)

Shaping must not outweigh the outcome. With P the largest total penalty (max_turns
turns, max_invalid_calls invalid calls) and B = progress_coef the largest bonus, the
recipe is flagged when

  P + B >= success_reward − failure_reward   a failure can score at least as high as a
                                              success (the ordering flips), or
  P > success_reward (> 0)                   a success can end with a negative reward, or
  B > −failure_reward (failure_reward < 0)    a failure can end with a positive reward.

The check is host-side Python on the frozen config (`shaping_report`); `__post_init__`
runs it and, per `on_dominance`, warns (default), raises ValueError or ignores.
`combine` is a pure jnp function and also reports per episode whether the realized
shaping exceeded the outcome's magnitude.

Source: mtrl's practice rule (docs/design.md section 4). The step, invalid and progress
terms are not potential-based shaping (Ng, Harada & Russell 1999, "Policy Invariance
Under Reward Transformations: Theory and Application to Reward Shaping", ICML), so
they can change which policy is optimal; the dominance check bounds them instead.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from mtrl.config.fields import check_choice
from mtrl.credit.group import as_float

Array = jax.Array

DOMINANCE_ACTIONS = ("warn", "raise", "ignore")


class ShapingReport(NamedTuple):
    max_penalty: float  # P: step_penalty·max_turns + invalid_tool_penalty·max_invalid_calls
    max_bonus: float  # B: progress_coef
    outcome_gap: float  # success_reward − failure_reward
    reasons: tuple[str, ...]  # empty when the outcome dominates

    @property
    def outcome_dominates(self) -> bool:
        return not self.reasons


class RewardBreakdown(NamedTuple):
    total: Array  # [B]
    outcome: Array  # [B]
    step: Array  # [B] (≤ 0)
    invalid: Array  # [B] (≤ 0)
    progress: Array  # [B] (≥ 0)
    shaping_exceeds_outcome: Array  # [B] bool: |step + invalid + progress| > |outcome|


@dataclasses.dataclass(frozen=True)
class RewardRecipe:
    """Outcome plus small shaping terms (module docstring)."""

    success_reward: float = 1.0
    failure_reward: float = -1.0
    step_penalty: float = 0.01  # per turn taken
    invalid_tool_penalty: float = 0.05  # per invalid tool call
    progress_coef: float = 0.0  # weight of progress in [0, 1]; 0 disables shaping
    max_turns: int = 10
    max_invalid_calls: Optional[int] = None  # None: one per turn at most (max_turns)
    on_dominance: str = "warn"

    def __post_init__(self):
        if self.success_reward <= self.failure_reward:
            raise ValueError(f"success_reward ({self.success_reward}) must exceed "
                             f"failure_reward ({self.failure_reward})")
        for name in ("step_penalty", "invalid_tool_penalty", "progress_coef"):
            if getattr(self, name) < 0:
                raise ValueError(f"RewardRecipe.{name} must be >= 0 (it is a magnitude), "
                                 f"got {getattr(self, name)}")
        if self.max_turns < 1:
            raise ValueError(f"RewardRecipe.max_turns must be >= 1, got {self.max_turns}")
        if self.max_invalid_calls is not None and self.max_invalid_calls < 0:
            raise ValueError(f"RewardRecipe.max_invalid_calls must be >= 0, got "
                             f"{self.max_invalid_calls}")
        check_choice("RewardRecipe.on_dominance", self.on_dominance, DOMINANCE_ACTIONS)
        report = self.shaping_report()
        if report.outcome_dominates or self.on_dominance == "ignore":
            return
        message = ("RewardRecipe shaping can outweigh the outcome: " + "; ".join(report.reasons)
                   + ". Lower the penalties/progress_coef or widen the outcome gap.")
        if self.on_dominance == "raise":
            raise ValueError(message)
        warnings.warn(message, stacklevel=3)

    @property
    def invalid_call_bound(self) -> int:
        return self.max_turns if self.max_invalid_calls is None else self.max_invalid_calls

    def shaping_report(self) -> ShapingReport:
        """Worst-case shaping against the outcome (host-side; see module docstring)."""
        penalty = self.step_penalty * self.max_turns + (
            self.invalid_tool_penalty * self.invalid_call_bound)
        bonus = self.progress_coef
        gap = self.success_reward - self.failure_reward
        reasons = []
        if penalty + bonus >= gap:
            reasons.append(f"max penalty {penalty:g} + max bonus {bonus:g} >= outcome gap "
                           f"{gap:g} (a failure can score as high as a success)")
        if self.success_reward > 0 and penalty > self.success_reward:
            reasons.append(f"max penalty {penalty:g} > success reward {self.success_reward:g}")
        if self.failure_reward < 0 and bonus > -self.failure_reward:
            reasons.append(f"max bonus {bonus:g} > |failure reward| {-self.failure_reward:g}")
        return ShapingReport(penalty, bonus, gap, tuple(reasons))

    def combine(self, success, num_turns, invalid_calls,
                progress: Optional[Array] = None) -> RewardBreakdown:
        """Per-episode rewards: bool [B], int [B], int [B], optional float [B] in [0, 1]."""
        success = jnp.asarray(success).astype(bool)
        if success.ndim != 1:
            raise ValueError(f"success must have shape [B], got {success.shape}")
        num_turns, invalid_calls = jnp.asarray(num_turns), jnp.asarray(invalid_calls)
        for name, x in (("num_turns", num_turns), ("invalid_calls", invalid_calls)):
            if x.shape != success.shape:
                raise ValueError(f"{name} shape {x.shape} must equal success shape "
                                 f"{success.shape}")
        outcome = jnp.where(success, self.success_reward, self.failure_reward)
        step = -self.step_penalty * num_turns.astype(outcome.dtype)
        invalid = -self.invalid_tool_penalty * invalid_calls.astype(outcome.dtype)
        if progress is None:
            shaping_progress = jnp.zeros_like(outcome)
        else:
            progress = as_float(progress)
            if progress.shape != success.shape:
                raise ValueError(f"progress shape {progress.shape} must equal success shape "
                                 f"{success.shape}")
            shaping_progress = self.progress_coef * jnp.clip(progress, 0.0, 1.0)
        shaping = step + invalid + shaping_progress
        return RewardBreakdown(total=outcome + shaping, outcome=outcome, step=step,
                               invalid=invalid, progress=shaping_progress,
                               shaping_exceeds_outcome=jnp.abs(shaping) > jnp.abs(outcome))
