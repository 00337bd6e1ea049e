"""The zero-advantage filter (`train.drop_zero_advantage`): train only on rows that
carry a policy gradient.

A row whose advantage is zero on every loss token of every agent (typically every
row of a sibling group whose returns are all equal: all failed or all solved) adds
nothing to a REINFORCE or clipped-ratio policy gradient. Such rows are dropped before
the update, and the survivors are padded with masked rows to a power of two, so the
train step compiles for a handful of row counts and its cost follows the informative
rows, not the tree. (A packed update pads them further, to the one row count of the
largest tree, update/stage.py: its cost follows the packed tokens, not the rows.)

This is not DAPO's dynamic sampling (Yu et al. 2025), which over-samples prompts until
the batch holds only groups whose accuracy lies strictly between 0 and 1: here the
batch shrinks instead of being refilled. (The option was called
`train.dynamic_sampling`; that name now fails in one line pointing here.)

What changes: the loss's mean over rows runs over the kept rows only (the gradient
is rescaled, its direction unchanged for a row-mean aggregation), and a KL penalty
no longer reaches the dropped rows.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mtrl.rollout.batch import round_up_pow2
from mtrl.training.update.minibatch import PolicyMinibatch, take_rows


def informative_rows(minibatch: PolicyMinibatch) -> np.ndarray:
    """[B] bool: the row has a loss token with a non-zero advantage for some agent."""
    minibatch.validate()
    signal = jnp.any(minibatch.loss_mask & (minibatch.advantages != 0), axis=(0, 2))
    return np.asarray(jax.device_get(signal))


def keep_informative_groups(minibatch: PolicyMinibatch, size: int = 1, min_rows: int = 8
                            ) -> tuple[PolicyMinibatch | None, int]:
    """Keeps a group of `size` consecutive rows (1: rows; 2: REFUEL's pairs, which move
    whole) when any of its rows is informative; pads with loss-masked copies of the
    first kept group to a power of two >= min_rows. Returns (rows, kept real rows), or
    (None, 0) when no row is informative.

    Padding copies have an all-false loss mask, so they add nothing to any loss or
    gradient (the train step's padding convention)."""
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
