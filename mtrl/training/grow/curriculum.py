"""The `curriculum` section: which tasks a step trains on and which turns carry loss
(the latter, TCOD's, is applied by the loss-mask pipeline: advantages/loss_mask.py).

learnable_band (practice rule; mtrl.credit.curriculum.LearnableBandFilter): the step's
  tasks are drawn in a seeded order, skipping tasks whose success rate over their last
  `band_window` attempts lies outside [band_low, band_high]; an attempt is one of the
  task's root-to-leaf paths in the step's tree, a success when some step on it reports
  `correct` (or, lacking that info, ends the episode). Too-easy and too-hard tasks give
  a group-relative estimator no signal. When every task is outside the band the plain
  order is used, so a step always has tasks. The record is saved in each checkpoint
  and restored on resume (`BandSampler.state` / `restore`).
tcod, steps_per_stage (Wang et al. 2026, TCOD): which turns carry loss at each RL
  step; the schedule and its mask are the loss-mask pipeline's
  (training/advantages/loss_mask.py tcod_turn_mask).
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import numpy as np

from mtrl.config.fields import check_choice, check_bool, check_int
from mtrl.credit.curriculum import BandFilterConfig, LearnableBandFilter
from mtrl.rollout.tree_paths import tree_paths

TCOD_SCHEDULES = ("", "front_to_back", "back_to_front")


@dataclasses.dataclass(frozen=True)
class CurriculumConfig:
    tcod: str = ""  # "" (off), "front_to_back", "back_to_front"
    steps_per_stage: int = 10
    learnable_band: bool = False
    band_low: float = 0.1
    band_high: float = 0.9
    band_window: int = 16
    band_min_attempts: int = 1

    def __post_init__(self):
        check_choice("tcod", self.tcod, TCOD_SCHEDULES)
        check_int("steps_per_stage", self.steps_per_stage, 1)
        check_bool("learnable_band", self.learnable_band)
        self.band()  # the band's own checks

    def band(self) -> BandFilterConfig:
        return BandFilterConfig(low=self.band_low, high=self.band_high,
                                window=self.band_window, min_attempts=self.band_min_attempts)


def path_successes(tree) -> list[list[bool]]:
    """Per task of the tree, one bool per root-to-leaf path (module docstring)."""
    out = []
    for paths in tree_paths(tree):
        successes = []
        for q, infos in enumerate(paths.infos):
            hit = any(bool(np.all(info["correct"])) if isinstance(info, dict)
                      and "correct" in info else False for info in infos)
            successes.append(hit)
        out.append(successes)
    return out


def seeded_order(num_tasks: int, seed: int, position: int) -> int:
    """The task at `position` of the endless seeded order: consecutive slices of a
    permutation, reshuffled per epoch."""
    epoch, offset = divmod(position, num_tasks)
    return int(np.random.default_rng([seed, 7, epoch]).permutation(num_tasks)[offset])


class BandSampler:
    """Seeded task order with the learnable-band filter (module docstring)."""

    def __init__(self, num_tasks: int, seed: int, config: CurriculumConfig):
        self.num_tasks, self.seed = num_tasks, seed
        self.filter = LearnableBandFilter(num_tasks, config.band())
        self.position = 0  # next position in the endless seeded order

    def next_ids(self, count: int) -> list[int]:
        """The next `count` task ids in the order whose task is in the band."""
        keep = self.filter.keep()
        if not keep.any():
            keep = np.ones_like(keep)
        out = []
        while len(out) < count:
            task = seeded_order(self.num_tasks, self.seed, self.position)
            self.position += 1
            if keep[task]:
                out.append(task)
        return out

    def record(self, task_ids: list[int], successes: list[list[bool]]) -> None:
        if len(task_ids) != len(successes):
            raise ValueError(f"{len(task_ids)} tasks but {len(successes)} success lists")
        ids = [t for t, s in zip(task_ids, successes) for _ in s]
        self.filter.record(ids, [x for s in successes for x in s])

    def in_band_fraction(self) -> float:
        return float(self.filter.keep().mean())

    def state(self) -> dict[str, Any]:
        """JSON-able: saved in each checkpoint's extra["band"]."""
        return {"position": self.position, **self.filter.state()}

    def restore(self, state: dict[str, Any]) -> None:
        self.filter.load_state(state)
        self.position = int(state["position"])


class StepTasks:
    """The trainer's task chooser: step s (1-based) takes tasks_per_step tasks of the
    seeded order, through the learnable band when it is on. `choose(s)` may run in a
    background thread (train.off_policy grows step s+1 while step s records), so the
    chosen ids are kept per step and the band is locked."""

    def __init__(self, tasks: list, per_step: int, seed: int, config: CurriculumConfig):
        self.tasks, self.per_step, self.seed = tasks, per_step, seed
        self.band = BandSampler(len(tasks), seed, config) if config.learnable_band else None
        self._ids: dict[int, list[int]] = {}
        self._lock = threading.Lock()

    def choose(self, step: int) -> list:
        with self._lock:
            if self.band is not None:
                ids = self.band.next_ids(self.per_step)
            else:
                start = (step - 1) * self.per_step
                ids = [seeded_order(len(self.tasks), self.seed, p)
                       for p in range(start, start + self.per_step)]
            self._ids[step] = ids
        return [self.tasks[i] for i in ids]

    def chosen(self, step: int) -> list:
        """The tasks `choose(step)` returned (until `record(step)` takes them)."""
        with self._lock:
            return [self.tasks[i] for i in self._ids[step]]

    def record(self, step: int, tree) -> dict[str, float]:
        """Feeds step `step`'s outcomes to the band; its metrics (none when off)."""
        with self._lock:
            ids = self._ids.pop(step, None)
            if self.band is None:
                return {}
            if ids is None:
                raise ValueError(f"step {step}: no tasks were chosen for it")
            self.band.record(ids, path_successes(tree))
            return {"curriculum/in_band_fraction": self.band.in_band_fraction()}

    def band_state(self) -> dict[str, Any] | None:
        """The band sampler's state (JSON data; None when the band is off)."""
        with self._lock:
            return None if self.band is None else self.band.state()

    def restore_band(self, state: dict[str, Any] | None) -> None:
        if self.band is not None and state is not None:
            self.band.restore(state)
