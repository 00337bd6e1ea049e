"""Rows that must travel together: a loss's groups (PolicyLoss.group_size), REFUEL's
sibling pairs.

REFUEL (mtrl.losses.refuel) regresses the log-ratio difference of rows (2i, 2i+1) onto
their return difference, which is only meaningful when both responses continue the
same history: two samples of one tree node. make_batch lays rows out turn-major, then
node, then sample g, so with G even rows (2i, 2i+1) are samples (2k, 2k+1) of one node;
`check_groups` asserts it. The PPO shuffle (ppo_epochs.ppo_update, group_size) and the
zero-advantage filter (row_filter.keep_informative_groups) then move whole groups,
never rows.
"""

from __future__ import annotations

import numpy as np

from mtrl.losses import POLICY_LOSSES
from mtrl.rollout.batch import RolloutBatch


def group_size(loss: str) -> int:
    """Rows per unit of the loss, as registered (2 for REFUEL's pairs, else 1)."""
    return POLICY_LOSSES.get(loss).group_size


def check_groups(batch: RolloutBatch, size: int) -> None:
    """Every group of `size` consecutive real rows shares one parent (turn and node)."""
    if size == 1:
        return
    turn, node = np.asarray(batch.row_turn), np.asarray(batch.row_node)
    if turn.size % size:
        raise ValueError(f"{turn.size} rows do not form groups of {size}")
    turn, node = turn.reshape(-1, size), node.reshape(-1, size)
    bad = np.flatnonzero(((turn != turn[:, :1]) | (node != node[:, :1])).any(axis=1))
    if bad.size:
        raise ValueError(f"rows {bad[0] * size}..{bad[0] * size + size - 1} do not share a "
                         "parent node (REFUEL needs rollout.num_generations even)")
