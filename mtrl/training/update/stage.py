"""The update stage: a step's rows and advantages in, new parameters out.

    rows   = policy_minibatch(rollout.batch, advantages)     [N, C, L] (minibatch.py)
    rows   = every process's rows (gather_rows)              several processes only
    check_groups(rows, unit)      a loss's groups share a parent (row_groups.py)
    rows   = keep_informative_groups(rows, unit)             train.drop_zero_advantage
    state  = ppo_update(step_fn, state, rows, ...)           PPO epochs (ppo_epochs.py)

unit = the loss's group size (REFUEL's pairs: 2), so the filter and the shuffle move
whole groups. A non-finite update fails naming the step.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax

from mtrl.parallel.process_rollout import gather_rows, is_multiprocess
from mtrl.rollout import StepRollout
from mtrl.training.update.minibatch import PolicyMinibatch, policy_minibatch
from mtrl.training.update.ppo_epochs import ppo_update
from mtrl.training.update.row_filter import informative_rows, keep_informative_groups
from mtrl.training.update.row_groups import check_groups
from mtrl.training.update.step_metrics import check_finite
from mtrl.training.update.train_state import TrainState


@dataclasses.dataclass(frozen=True)
class Update:
    """What the update stage did: `metrics` of its minibatches ([]: no update ran),
    `rows` (None: every group was uninformative and dropped), `kept` real rows,
    `informative` rows (a non-zero advantage on a loss token, before any filter), the
    last minibatch's `packing` token counts and the train step's `compiles` so far."""

    metrics: list
    rows: PolicyMinibatch | None
    kept: int
    informative: int = 0
    packing: dict = dataclasses.field(default_factory=dict)
    compiles: int = 0

    @property
    def skipped(self) -> str | None:
        """Why no update ran, or None."""
        if self.metrics:
            return None
        return ("update skipped: no informative group" if self.rows is None
                else "update skipped: no trainable token")


@dataclasses.dataclass(frozen=True)
class Updater:
    """Everything the stage reads: the jitted train step, the `train` section's
    epochs, minibatches and zero-advantage filter, the loss's group size and the
    PPO shuffle's key of a step."""

    step_fn: Any  # train_step.make_train_step's TrainStep
    ppo_epochs: int
    minibatches: int
    drop_zero_advantage: bool
    group_size: int  # PolicyLoss.group_size of the configured loss
    key_of: Callable[[int], jax.Array]  # RL step -> its PPO key (RunKeys.ppo)

    def update(self, rollout: StepRollout, advantages: jax.Array, state: TrainState,
               step: int) -> tuple[TrainState, Update]:
        """(new state, Update) of RL step `step` (module docstring)."""
        batch, unit = rollout.batch, self.group_size
        rows, kept = policy_minibatch(batch, advantages), batch.num_rows
        if is_multiprocess():  # every process updates on all processes' rows
            rows, kept = gather_rows(rows)
        check_groups(batch, unit)
        informative = int(informative_rows(rows).sum())
        if self.drop_zero_advantage:
            rows, kept = keep_informative_groups(rows, unit,
                                                 min_rows=max(8, self.minibatches * unit))
        metrics = []
        if rows is not None:
            state, metrics = ppo_update(self.step_fn, state, rows, epochs=self.ppo_epochs,
                                        minibatches=self.minibatches, key=self.key_of(step),
                                        group_size=unit)
        try:
            check_finite(metrics)
        except FloatingPointError as e:
            raise FloatingPointError(f"step {step}: {e}") from None
        return state, Update(metrics, rows, kept, informative, packing=dict(self.step_fn.last_packing),
                             compiles=self.step_fn.num_compiles)
