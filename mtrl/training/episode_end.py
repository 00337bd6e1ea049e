"""Episodes that end inside the tree: completions after the end leave the loss.

The generator expands a node unless its J joint actions' mean reward passes the
termination threshold, so a branch whose own episode is over (math: solved at an
earlier turn; tool: answered or out of turns) can still get children. Environments
mark such steps with step info `ended` (True: the branch's state was already over
when this turn was played). Those completions are not actions of the episode:
their rows are dropped from the loss here, so no estimator credits text written
after the end (UFO gives every turn of a path the path's advantage).

A step's `ended` is a property of the node's state, so every joint action of a node
agrees; a node is dropped when any of its steps says so.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from mtrl.rollout.batch import RolloutBatch
from mtrl.rollout.tree import TreeRollout


def ended_nodes(tree: TreeRollout) -> set[tuple[int, int]]:
    """(turn, node) of every node whose state had already ended."""
    joint = tree.joint_actions
    out = set()
    for record in tree.turns:
        for m, node in enumerate(record.node_index):
            if any(bool(record.infos[m * joint + j].get("ended", False)) for j in range(joint)):
                out.add((record.turn, int(node)))
    return out


def ended_keep_mask(tree: TreeRollout, batch: RolloutBatch) -> np.ndarray:
    """[C] bool: rows that stay in the loss (not played after their episode ended)."""
    dead = ended_nodes(tree)
    turn, node = np.asarray(batch.row_turn), np.asarray(batch.row_node)
    return np.array([not (int(t) > 0 and (int(t), int(n)) in dead)
                     for t, n in zip(turn, node)], bool)


def drop_ended(batch: RolloutBatch, tree: TreeRollout) -> RolloutBatch:
    """The batch with rows played after their episode ended out of the loss."""
    keep = ended_keep_mask(tree, batch)
    if keep.all():
        return batch
    return batch.replace(loss_mask=batch.loss_mask & jnp.asarray(keep)[None, :, None])
