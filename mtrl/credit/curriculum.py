"""Curricula: turn-depth schedules (TCOD) and a learnable-band task filter.

Turn-depth schedules follow TCOD (Wang et al. 2026, "TCOD: Exploring Temporal
Curriculum in On-Policy Distillation for Multi-turn Autonomous Agents",
arXiv:2604.24005), which controls how deep into a multi-turn trajectory the student is
trained and grows that depth during training. With c the number of steps per stage:

  front-to-back:  W(step) = min(1 + ⌊step / c⌋, max_turns)
                  the first W turns (1-based turns 1..W) are trained;
  back-to-front:  k(step) = max(0, min(n − 1 − ⌊step / c⌋, n − 1))
                  for n-turn trajectories the student takes over at 0-indexed turn k:
                  turns 0..k−1 are a replayed prefix (not trained), turns k..n−1 are
                  trained, so training starts at the last turn and moves to the front.

These are pure jnp functions of the step (a traced step does not retrace).

Learnable-band filter (host side, plain Python/NumPy, since it keeps per-task history
between steps): keep tasks whose success rate over their most recent `window`
attempts lies in [low, high] (default [0.1, 0.9], both edges inclusive); tasks that are
always solved or never solved give a group-relative method no signal. Tasks with fewer
than `min_attempts` recorded attempts are kept, so new tasks get measured.
Source: mtrl's practice rule, a per-task, history-based widening of DAPO's dynamic
sampling (Yu et al. 2025, "DAPO: An Open-Source LLM Reinforcement Learning System at
Scale"), which drops groups whose success rate is exactly 0 or 1; the [0.1, 0.9]
defaults are mtrl's choice, not a published value.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


def _check_schedule(steps_per_stage: int, turns: int, name: str) -> None:
    if not isinstance(steps_per_stage, int) or steps_per_stage < 1:
        raise ValueError(f"steps_per_stage must be a positive int, got {steps_per_stage!r}")
    if not isinstance(turns, int) or turns < 1:
        raise ValueError(f"{name} must be a positive int, got {turns!r}")


def front_to_back_window(step, steps_per_stage: int, max_turns: int) -> Array:
    """W(step) = min(1 + ⌊step / c⌋, max_turns): number of leading turns trained."""
    _check_schedule(steps_per_stage, max_turns, "max_turns")
    step = jnp.asarray(step)
    return jnp.minimum(1 + step // steps_per_stage, max_turns)


def back_to_front_start(step, steps_per_stage: int, num_turns: int) -> Array:
    """k(step) = max(0, min(n − 1 − ⌊step / c⌋, n − 1)): 0-indexed first trained turn."""
    _check_schedule(steps_per_stage, num_turns, "num_turns")
    step = jnp.asarray(step)
    return jnp.maximum(0, jnp.minimum(num_turns - 1 - step // steps_per_stage, num_turns - 1))


def _check_turn_index(turn_index, step) -> Array:
    """Integer `turn_index` (any shape) and a scalar `step`; vmap for a vector of steps."""
    turn_index = jnp.asarray(turn_index)
    if not jnp.issubdtype(turn_index.dtype, jnp.integer):
        raise ValueError(f"turn_index must have an integer dtype (1-based turns), got "
                         f"{turn_index.dtype}")
    if jnp.ndim(step) != 0:
        raise ValueError(f"step must be a scalar, got shape {jnp.shape(step)}; vmap over "
                         f"a vector of steps")
    return turn_index


def front_to_back_turn_mask(turn_index, step, steps_per_stage: int, max_turns: int) -> Array:
    """bool, shape of `turn_index` (1-based, 0 = not a sampled token): turn ≤ W(step)."""
    turn_index = _check_turn_index(turn_index, step)
    window = front_to_back_window(step, steps_per_stage, max_turns)
    return (turn_index >= 1) & (turn_index <= window)


def back_to_front_turn_mask(turn_index, step, steps_per_stage: int, num_turns: int) -> Array:
    """bool, shape of `turn_index` (1-based): 0-indexed turn (turn − 1) ≥ k(step)."""
    turn_index = _check_turn_index(turn_index, step)
    start = back_to_front_start(step, steps_per_stage, num_turns)
    return (turn_index >= 1) & (turn_index - 1 >= start)


@dataclasses.dataclass(frozen=True)
class BandFilterConfig:
    low: float = 0.1
    high: float = 0.9
    window: int = 16  # attempts per task remembered
    min_attempts: int = 1  # fewer recorded attempts: keep the task

    def __post_init__(self):
        if not 0.0 <= self.low <= self.high <= 1.0:
            raise ValueError(f"need 0 <= low <= high <= 1, got low={self.low}, high={self.high}")
        if self.window < 1:
            raise ValueError(f"window must be >= 1, got {self.window}")
        if not 1 <= self.min_attempts <= self.window:
            raise ValueError(f"min_attempts must lie in [1, window={self.window}], "
                             f"got {self.min_attempts}")


class LearnableBandFilter:
    """Host-side record of recent successes per task; `keep` selects the learnable band.

    keep_i = (low ≤ s_i ≤ high) or n_i < min_attempts, with s_i the success rate of
    task i over its last n_i = min(attempts, window) attempts (edges inclusive).
    Source: mtrl's practice rule generalizing DAPO dynamic sampling (Yu et al. 2025);
    see the module docstring.
    """

    def __init__(self, num_tasks: int, config: BandFilterConfig = BandFilterConfig()):
        if num_tasks < 1:
            raise ValueError(f"num_tasks must be >= 1, got {num_tasks}")
        self.config = config
        self._outcomes = np.zeros((num_tasks, config.window), bool)  # ring buffer per task
        self._attempts = np.zeros(num_tasks, np.int64)  # total attempts ever recorded

    @property
    def num_tasks(self) -> int:
        return self._outcomes.shape[0]

    def record(self, task_ids: Iterable[int], successes: Iterable[bool]) -> None:
        """Appends outcomes in order; a task may appear several times (e.g. G samples)."""
        task_ids, successes = np.asarray(list(task_ids)), np.asarray(list(successes), bool)
        if task_ids.shape != successes.shape or task_ids.ndim != 1:
            raise ValueError(f"task_ids and successes must be equal-length sequences, got "
                             f"{task_ids.shape} and {successes.shape}")
        if task_ids.size and (task_ids.min() < 0 or task_ids.max() >= self.num_tasks):
            raise ValueError(f"task ids must lie in [0, {self.num_tasks}), got "
                             f"[{task_ids.min()}, {task_ids.max()}]")
        for task, success in zip(task_ids, successes):
            self._outcomes[task, self._attempts[task] % self.config.window] = success
            self._attempts[task] += 1

    def success_rate(self) -> np.ndarray:
        """[num_tasks] float: success rate over the recent window (NaN if never attempted)."""
        seen = np.minimum(self._attempts, self.config.window)
        rate = np.full(self.num_tasks, np.nan)
        np.divide(self._outcomes.sum(axis=1), seen, out=rate, where=seen > 0)
        return rate

    def keep(self) -> np.ndarray:
        """[num_tasks] bool: low ≤ recent success rate ≤ high, or too few attempts yet."""
        seen = np.minimum(self._attempts, self.config.window)
        rate = self.success_rate()
        in_band = (rate >= self.config.low) & (rate <= self.config.high)
        return np.where(seen < self.config.min_attempts, True, in_band)

    def state(self) -> dict:
        """JSON-able record (for checkpoints): outcomes [num_tasks, window], attempts."""
        return {"outcomes": self._outcomes.astype(int).tolist(),
                "attempts": self._attempts.tolist()}

    def load_state(self, state: dict) -> None:
        outcomes = np.asarray(state["outcomes"], bool)
        attempts = np.asarray(state["attempts"], np.int64)
        if outcomes.shape != self._outcomes.shape or attempts.shape != self._attempts.shape:
            raise ValueError(f"state holds {outcomes.shape[0]} tasks x {outcomes.shape[-1]} "
                             f"window, this filter {self._outcomes.shape} (tasks or window "
                             f"changed)")
        self._outcomes[...] = outcomes
        self._attempts[...] = attempts
