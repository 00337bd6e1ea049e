"""MAGRPO credit: tree rewards → per-agent completion advantages → rollout rows.

MAGRPO (Liu et al. 2025, "LLM Collaboration with Multi-Agent Reinforcement Learning";
CoMLRL) composes three steps, each its own function:

  1. R_t = tree returns over the dense tree (mtrl.credit.tree.tree_returns),
  2. A_t = sibling-relative advantages over the J joint actions of each node
     (tree_advantages with an ADVANTAGE_ESTIMATORS name),
  3. per-agent credit: the J axis of A_t becomes [N, G] completion advantages
     (mtrl.credit.joint_actions.per_agent_credit; sum over joint actions containing
     the completion in `cross`, CoMLRL's choice, or mean).

`magrpo_advantages` returns, per turn t, an array B + [J]*(t−1) + [N, G]: the node
axes of turn t followed by agent and completion. `row_advantages` gathers them into
the rollout batch's row layout (mtrl.rollout.batch: per row its turn, the node's flat
index in [P] + [J]*(turn−1), and the sample g), giving [N, C].
"""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mtrl.credit.joint_actions import per_agent_credit
from mtrl.credit.tree import tree_advantages, tree_exists, tree_returns

Array = jax.Array


def magrpo_advantages(rewards: Sequence, expanded: Sequence, *, gamma, mode: str,
                      num_agents: int, num_generations: int, estimator: str = "mean",
                      credit: str = "sum", **estimator_opts) -> list[Array]:
    """Per turn t: [B, J^(t−1) node axes, N, G] advantages of each agent's completions.

    Entries of nodes that were never generated are 0.
    """
    returns = tree_returns(rewards, expanded, gamma)
    exists = tree_exists(expanded)
    advantages = tree_advantages(returns, exists, estimator=estimator, **estimator_opts)
    return [per_agent_credit(a_t, mode, num_agents, num_generations, reduce=credit)
            for a_t in advantages]


def row_advantages(per_turn: Sequence, row_turn, row_node, row_sample) -> Array:
    """Gathers per-turn [P, J^(t−1) node axes, N, G] advantages into rows: [N, C].

    Row c belongs to turn row_turn[c] (1-based; 0 marks a padding row, which gets 0),
    node row_node[c] (flat index into [P] + [J]*(turn−1)) and sample row_sample[c].
    """
    if len(per_turn) == 0:
        raise ValueError("per_turn must hold at least one turn")
    first = jnp.shape(per_turn[0])
    if len(first) != 3:
        raise ValueError(f"per_turn[0] must have shape [P, N, G], got {first}")
    num_tasks, agents, gens = first
    joint = jnp.shape(per_turn[1])[1] if len(per_turn) > 1 else 1
    for t, x in enumerate(per_turn, start=1):
        want = (num_tasks,) + (joint,) * (t - 1) + (agents, gens)
        if jnp.shape(x) != want:
            raise ValueError(f"per_turn[{t - 1}] (turn {t}) must have shape {want} "
                             f"([P] + [J]*{t - 1} + [N, G]), got {jnp.shape(x)}")
    row_turn, row_node, row_sample = (jnp.asarray(x) for x in (row_turn, row_node, row_sample))
    for name, x in (("row_node", row_node), ("row_sample", row_sample)):
        if x.shape != row_turn.shape or row_turn.ndim != 1:
            raise ValueError(f"row_turn and {name} must be equal rank-1 [C] arrays, got "
                             f"{row_turn.shape} and {x.shape}")

    # One flat table of nodes across turns: turn t's nodes start at offsets[t − 1].
    flat = [jnp.reshape(x, (-1, agents, gens)) for x in per_turn]
    offsets = np.cumsum([0] + [f.shape[0] for f in flat])
    table = jnp.concatenate(flat, axis=0)  # [nodes, N, G]
    turn_offset = jnp.asarray(offsets[:-1], jnp.int32)[jnp.clip(row_turn - 1, 0, len(flat) - 1)]
    gathered = table[turn_offset + row_node, :, row_sample]  # [C, N]
    valid = (row_turn >= 1) & (row_turn <= len(flat))
    return jnp.where(valid[:, None], gathered, 0.0).T
