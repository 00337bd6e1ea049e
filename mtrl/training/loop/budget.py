"""A run's time budget: reported and warned about, never enforced.

Cutting the loop at a wall-clock deadline made results depend on the machine: on a
loaded machine SFT took most of the default's 14 minutes and RL got one step, and
the run still looked like a normal result. Now every planned step runs; when the
elapsed time passes `train.budget_minutes` (0: no budget) the run says so once on
stderr, with the projected total, and the summary carries `over_budget`.
"""

from __future__ import annotations

import sys
import time


class Budget:
    def __init__(self, minutes: float, started: float):
        if not minutes >= 0:
            raise ValueError(f"config.train.budget_minutes must be >= 0, got {minutes!r}")
        self.minutes = float(minutes)
        self.started = started
        self.warned = False

    def elapsed_minutes(self) -> float:
        return (time.perf_counter() - self.started) / 60

    def exceeded(self) -> bool:
        return bool(self.minutes) and self.elapsed_minutes() > self.minutes

    def check(self, step: int, total_steps: int) -> None:
        """Warns once, at the first step that ends past the budget."""
        if self.warned or not self.exceeded():
            return
        self.warned = True
        print(f"warning: {self.elapsed_minutes():.1f} min elapsed at step {step}/{total_steps}, "
              f"over the {self.minutes:g}-minute budget (train.budget_minutes); every planned "
              "step still runs", file=sys.stderr, flush=True)
