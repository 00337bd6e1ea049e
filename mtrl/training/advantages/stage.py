"""The advantages stage: a scored tree in, its StepRollout and per-token advantages out.

    rollout   = StepRollout.of(tree, rollout.max_context)     the tree with its rows
    rollout   = filter_loss_mask(...)        TCOD turns, void turns (loss_mask.py)
    penalty   = return_penalties(...)        the reference pass's KL (kl_in=reward),
                                             DAPO's overlong (penalties.py), or None
    advantages = token_advantages(credit, rollout, γ, penalty)   [N, C, L] (estimators.py)

From here on the step is one StepRollout (rollout/step_rollout.py): the tree and the
rows laid out from it, passed together.
"""

from __future__ import annotations

import dataclasses

import jax

from mtrl.rollout import RolloutConfig, StepRollout
from mtrl.rollout.tree import TreeRollout
from mtrl.training.advantages.estimators import CreditConfig, token_advantages
from mtrl.training.advantages.loss_mask import MaskSettings, filter_loss_mask
from mtrl.training.advantages.penalties import FilterConfig, return_penalties
from mtrl.training.advantages.reference_pass import ReferencePass
from mtrl.training.policy.train_state import TrainState


@dataclasses.dataclass(frozen=True)
class AdvantageStage:
    """Everything the stage reads: the credit, rollout and filters sections, the loss
    mask's settings, the reference pass (None unless kl_in=reward with kl_coef > 0)
    and the tasks of this process's share of a step."""

    credit: CreditConfig
    rollout: RolloutConfig
    filters: FilterConfig
    mask: MaskSettings
    reference: ReferencePass | None
    num_tasks: int  # train.tasks_per_step over the processes

    def advantages(self, tree: TreeRollout, state: TrainState, step: int
                   ) -> tuple[StepRollout, jax.Array]:
        """(rollout, [N, C, L] advantages) of RL step `step` (module docstring)."""
        rollout = StepRollout.of(tree, length=self.rollout.max_context)
        rollout = filter_loss_mask(self.mask, rollout, step)
        penalty = return_penalties(rollout.batch, state, filters=self.filters,
                                   max_new_tokens=self.rollout.max_new_tokens,
                                   reference=self.reference, num_tasks=self.num_tasks)
        return rollout, token_advantages(self.credit, rollout, self.rollout.discount, penalty)
