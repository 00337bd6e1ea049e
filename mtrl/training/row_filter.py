"""Dynamic sampling for tree batches: train only on rows that carry a policy gradient.

A row whose advantage is zero on every loss token of every agent (typically every
row of a sibling group whose returns are all equal: all failed or all solved) adds
nothing to a REINFORCE or clipped-ratio policy gradient. DAPO's dynamic sampling
drops such groups; here the rows are dropped before the update, and the survivors
are padded with masked rows to a power of two, so the train step compiles for a
handful of row counts and its cost follows the informative rows, not the tree.

What changes: the loss's mean over rows runs over the kept rows only (the gradient
is rescaled, its direction unchanged for a row-mean aggregation), and a KL penalty
no longer reaches the dropped rows. The trainer applies it only when
`train.dynamic_sampling` is set.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mtrl.rollout.batch import round_up_pow2
from mtrl.training.minibatch import PolicyMinibatch, take_rows


def informative_rows(minibatch: PolicyMinibatch) -> np.ndarray:
    """[B] bool: the row has a loss token with a non-zero advantage for some agent."""
    minibatch.validate()
    signal = jnp.any(minibatch.loss_mask & (minibatch.advantages != 0), axis=(0, 2))
    return np.asarray(jax.device_get(signal))


def keep_informative_rows(minibatch: PolicyMinibatch, min_rows: int = 8
                          ) -> tuple[PolicyMinibatch | None, int]:
    """(the informative rows padded to a power of two >= min_rows with loss-masked
    copies of row 0, number of informative rows); (None, 0) when no row is informative.

    Padding copies have an all-false loss mask, so they add nothing to any loss or
    gradient (the train step's padding convention)."""
    keep = np.flatnonzero(informative_rows(minibatch))
    if keep.size == 0:
        return None, 0
    size = min(round_up_pow2(keep.size, min_rows), max(minibatch.tokens.shape[1], keep.size))
    rows = np.concatenate([keep, np.full(size - keep.size, keep[0])])
    kept = take_rows(minibatch, rows)
    real = jnp.asarray(np.arange(size) < keep.size)
    return kept.replace(loss_mask=kept.loss_mask & real[None, :, None]), int(keep.size)
