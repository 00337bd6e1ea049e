"""Rows that must travel together: REFUEL's sibling pairs.

REFUEL (mtrl.losses.refuel) regresses the log-ratio difference of rows (2i, 2i+1) onto
their return difference, which is only meaningful when both responses continue the
same history: two samples of one tree node. make_batch lays rows out turn-major, then
node, then sample g, so with G even rows (2i, 2i+1) are samples (2k, 2k+1) of one node;
`check_groups` asserts it. The PPO shuffle (ppo_epochs.ppo_update, group_size) and the
dynamic-sampling filter (`keep_informative_groups`) then move whole groups, never rows.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from mtrl.rollout.batch import RolloutBatch, round_up_pow2
from mtrl.training.minibatch import PolicyMinibatch, take_rows
from mtrl.training.row_filter import informative_rows

PAIRED_LOSSES = ("refuel",)


def group_size(loss: str) -> int:
    """Rows per unit for the loss: 2 for pairwise losses, else 1."""
    return 2 if loss in PAIRED_LOSSES else 1


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


def keep_informative_groups(minibatch: PolicyMinibatch, size: int, min_rows: int = 8
                            ) -> tuple[PolicyMinibatch | None, int]:
    """Dynamic sampling by whole groups: keep a group when any of its rows has a
    non-zero advantage on a loss token; pad with loss-masked copies of the first kept
    group to a power of two >= min_rows. Returns (rows, kept real rows) or (None, 0)."""
    informative = informative_rows(minibatch).reshape(-1, size).any(axis=1)
    groups = np.flatnonzero(informative)
    if groups.size == 0:
        return None, 0
    real = groups.size * size
    total = max(round_up_pow2(real, min_rows), size)
    padding = np.full((total - real) // size, groups[0])
    chosen = np.concatenate([groups, padding])
    rows = (chosen[:, None] * size + np.arange(size)).reshape(-1)
    kept = take_rows(minibatch, rows)
    is_real = jnp.asarray(np.arange(total) < real)
    return kept.replace(loss_mask=kept.loss_mask & is_real[None, :, None]), int(real)
