"""MAGRPO credit: tree rewards → per-agent completion advantages → rollout rows.

MAGRPO (Liu et al. 2025, "LLM Collaboration with Multi-Agent Reinforcement Learning";
CoMLRL) composes three steps, each its own function:

  1. R_t = tree returns over the dense tree (mtrl.credit.tree.tree_returns),
  2. per-agent returns: the J axis of R_t becomes [N, G], agent a's completion g
     collecting the returns of the joint actions containing it
     (mtrl.credit.joint_actions.per_agent_credit; summed in `cross`, CoMLRL's choice,
     or averaged; in `align` each completion is in one joint action),
  3. A = a GROUP_ADVANTAGES baseline over the agent's G completions of the node.

Summing returns before the baseline is CoMLRL's order (and docs/design.md's). Summing
advantages of joint actions instead agrees with it for the mean and raw baselines
only: rloo and max are not linear in the group.

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

from mtrl.credit.group import GROUP_ADVANTAGES
from mtrl.credit.joint_actions import per_agent_credit
from mtrl.credit.tree import tree_exists, tree_returns

Array = jax.Array


def magrpo_advantages(rewards: Sequence, expanded: Sequence, *, gamma, mode: str,
                      num_agents: int, num_generations: int, estimator: str = "mean",
                      credit: str = "sum", penalty: Sequence | None = None,
                      **estimator_opts) -> list[Array]:
    """Per turn t: [B, J^(t−1) node axes, N, G] advantages of each agent's completions.

    penalty: optional per turn [B, J^(t−1), N, G] values subtracted from each
    completion's own return before the baseline (R'_i = R_i − penalty_i, e.g.
    CoMLRL's β·KL_i in the reward). Entries of nodes never generated are 0.
    """
    returns = tree_returns(rewards, expanded, gamma)
    exists = tree_exists(expanded)
    fn = GROUP_ADVANTAGES.get(estimator)
    per_group = jax.vmap(lambda r, m: fn(r, m, **estimator_opts))
    out = []
    for r_t, e_t in zip(returns, exists):
        agent_returns = per_agent_credit(r_t, mode, num_agents, num_generations,
                                         reduce=credit)  # [..., N, G]
        if penalty is not None:
            agent_returns = agent_returns - jnp.asarray(penalty[len(out)], agent_returns.dtype)
        # A node's J joint actions exist together: one flag per node.
        node_exists = jnp.broadcast_to(jnp.asarray(e_t, bool)[..., :1, None],
                                       agent_returns.shape)
        flat = per_group(agent_returns.reshape(-1, num_generations),
                         node_exists.reshape(-1, num_generations))
        out.append(flat.reshape(agent_returns.shape))
    return out


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
