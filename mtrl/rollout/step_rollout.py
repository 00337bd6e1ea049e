"""One RL step's rollout, the one structure the credit and update stages pass along.

A grown tree has two views, made once and kept together:

  tree   TreeRollout on the host: the branching, texts, environment infos and
         rewards per turn (what path estimators, the void-turn filter and IGPO read);
  batch  RolloutBatch on the device: every completion as a padded row with its loss
         mask and the dense per-turn rewards (what the tree estimators, the return
         penalties and the update read), laid out from `tree` by make_batch.

StepRollout.of(tree) lays the rows out; a stage that changes the rollout (the
loss-mask pipeline) returns a new StepRollout, so the stages pass one value, never a
tree and rows separately.
"""

from __future__ import annotations

import dataclasses

import jax

from mtrl.rollout.batch import RolloutBatch, make_batch
from mtrl.rollout.tree import TreeRollout


@dataclasses.dataclass(frozen=True)
class StepRollout:
    """The step's tree and the rows laid out from it (module docstring)."""

    tree: TreeRollout
    batch: RolloutBatch

    @classmethod
    def of(cls, tree: TreeRollout, **layout) -> "StepRollout":
        """The tree with its rows (make_batch's keyword arguments: min_rows, min_len,
        length)."""
        return cls(tree, make_batch(tree, **layout))

    def with_loss_mask(self, mask: jax.Array) -> "StepRollout":
        """The same rollout with the batch's [N, C, L] loss mask replaced."""
        if mask.shape != self.batch.loss_mask.shape:
            raise ValueError(f"loss mask must be {self.batch.loss_mask.shape}, "
                             f"got {mask.shape}")
        return dataclasses.replace(self, batch=self.batch.replace(loss_mask=mask))
