"""From a rollout batch to per-token advantages for every agent (MAGRPO credit).

  A[a, c, i] = credit_a(turn, node, sample of row c) · loss_mask[a, c, i]

with credit from `mtrl.credit.magrpo_advantages` (tree returns, sibling baseline,
per-agent credit over joint actions) gathered into the batch's rows.
"""

from __future__ import annotations

import jax

from mtrl.credit import magrpo_advantages, row_advantages
from mtrl.rollout.batch import RolloutBatch


def token_advantages(batch: RolloutBatch, *, gamma: float, estimator: str = "mean",
                     credit: str = "sum", **estimator_opts) -> jax.Array:
    """[N, C, L] float32 advantages, zero wherever loss_mask is false."""
    per_turn = magrpo_advantages(
        batch.rewards, batch.expanded, gamma=gamma, mode=batch.joint_mode,
        num_agents=batch.num_agents, num_generations=batch.num_generations,
        estimator=estimator, credit=credit, **estimator_opts)
    rows = row_advantages(per_turn, batch.row_turn, batch.row_node, batch.row_sample)  # [N, C]
    return rows[:, :, None] * batch.loss_mask
