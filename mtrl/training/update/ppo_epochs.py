"""PPO's host loop: epochs of minibatch updates over one batch of rows, each epoch a
fresh shuffle (module named apart from its function, which mtrl.training exports)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mtrl.config.fields import check_int
from mtrl.training.update.minibatch import PolicyMinibatch, take_rows
from mtrl.training.policy.train_state import TrainState
from mtrl.training.update.train_step import TrainStep


def ppo_update(step_fn: TrainStep, state: TrainState, batch_arrays: PolicyMinibatch, *,
               epochs: int, minibatches: int, key: jax.Array, group_size: int = 1
               ) -> tuple[TrainState, list[dict[str, jax.Array]]]:
    """`epochs` passes over the rows of `batch_arrays` ([N, C, L]) in `minibatches` updates each.

    Epoch e permutes the contributing rows (any loss token in any agent) with
    fold_in(key, e) and deals them round-robin into `minibatches` index sets of C / M
    rows (M must divide C; rollout row counts are powers of two), padding rows filling
    the rest. Every minibatch therefore has the same static shape (the step compiles
    once) and the real rows are spread evenly; padding rows have an all-false loss mask,
    so they add nothing to any loss or gradient. A minibatch with no contributing row
    (fewer real rows than M) is skipped: a zero gradient would still move AdamW's
    moments and decay the weights.

    With epochs = minibatches = 1 and old log-probs from the current parameters, the
    first update is exactly on-policy (ratio 1).

    group_size > 1 (REFUEL's pairs, training/update/row_groups.py): rows (k·s .. k·s+s−1) form
    a group that is permuted and dealt as one unit, so it stays consecutive and whole
    in its minibatch; with 1 this is the row-wise shuffle above, bit for bit.

    The state passed in is donated (do not reuse it). Returns the final state and the
    device metrics of every update in order; call check_finite on them.
    """
    for name, value in (("epochs", epochs), ("minibatches", minibatches),
                        ("group_size", group_size)):
        check_int(name, value, 1)
    _, num_rows, _ = batch_arrays.validate(step_fn.num_agents)
    if num_rows % (minibatches * group_size):
        raise ValueError(f"{num_rows} rows do not split into {minibatches} equal minibatches "
                         f"of whole groups of {group_size}")
    contributing = np.asarray(jax.device_get(jnp.any(batch_arrays.loss_mask, axis=(0, 2))))
    group_contributes = contributing.reshape(-1, group_size).any(axis=1)
    real_groups = np.flatnonzero(group_contributes)
    padding_groups = np.flatnonzero(~group_contributes)
    all_metrics = []
    for epoch in range(epochs):
        order = np.asarray(jax.random.permutation(jax.random.fold_in(key, epoch),
                                                  real_groups.size))
        groups = np.concatenate([real_groups[order], padding_groups])
        for m in range(minibatches):
            chosen = groups[m::minibatches]
            selected = (chosen[:, None] * group_size + np.arange(group_size)).reshape(-1)
            if not contributing[selected].any():
                continue
            state, metrics = step_fn(state, take_rows(batch_arrays, selected))
            all_metrics.append(metrics)
    return state, all_metrics
