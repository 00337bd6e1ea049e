"""GiGPO: episode-level plus anchor-state step-level group advantages.

GiGPO (Feng et al. 2025, "Group-in-Group Policy Optimization for LLM Agent Training").
A group of G trajectories of up to K steps from the same task:

  A^E_g      = (R_g − mean_g' R_g') / F        episode advantage over the G returns
  R_{g,k}    = Σ_{k' ≥ k} γ^(k'−k) r_{g,k'}    discounted step return
  A^S_{g,k}  = (R_{g,k} − mean_S R) / F        over the step group S of all present
                                               steps (any trajectory, any k) whose
                                               anchor state equals s_{g,k}
  A_{g,k}    = A^E_g + ω · A^S_{g,k}

F is std + ε (`normalize_std=True`, ddof 1 by default, ε = 1e-6 added to the std) or 1
(`normalize_std=False`). Anchor states are given as integer ids (the caller hashes the
observation text); a step group with a single member gets A^S = 0. A trajectory is
present if it has any present step.

Step groups are found with a [M, M] equality matrix over the M = G·K steps; that is
exact under jit with static shapes and cheap for the group sizes of LLM agent RL.
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp

from mtrl.credit.group import (DEFAULT_GRPO_DDOF, DEFAULT_GRPO_EPSILON, as_float,
                               dr_grpo_advantages, grpo_advantages)
from mtrl.credit.turn_level import discounted_returns

Array = jax.Array


def anchor_group_advantages(values, state_ids, mask: Optional[Array] = None, *,
                            normalize_std: bool = True, ddof: int = DEFAULT_GRPO_DDOF,
                            epsilon: float = DEFAULT_GRPO_EPSILON) -> Array:
    """[M] values grouped by equal [M] integer state ids → [M] within-group advantages.

    (v − mean_group) / (std_group + ε) (or without the division); 0 for absent entries
    and for groups of one.
    """
    values = as_float(values)
    state_ids = jnp.asarray(state_ids)
    if values.ndim != 1 or state_ids.shape != values.shape:
        raise ValueError(f"values and state_ids must be equal rank-1 [M] arrays, got "
                         f"{values.shape} and {state_ids.shape}")
    if not jnp.issubdtype(state_ids.dtype, jnp.integer):
        raise ValueError(f"state_ids must be integers, got {state_ids.dtype}")
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 or 1, got {ddof!r}")
    mask = jnp.ones(values.shape, bool) if mask is None else jnp.asarray(mask).astype(bool)
    if mask.shape != values.shape:
        raise ValueError(f"mask shape {mask.shape} must equal values shape {values.shape}")

    same = (state_ids[:, None] == state_ids[None, :]) & mask[:, None] & mask[None, :]
    count = jnp.sum(same, axis=1)
    # Differences to the row's own value: a constant group gives exactly 0 (a rounding
    # residue in its mean would otherwise be divided by ε).
    diff = jnp.where(same, values[None, :] - values[:, None], 0.0)  # v_j − v_i
    offset = jnp.sum(diff, axis=1) / jnp.maximum(count, 1)  # mean_i − v_i
    squares = jnp.sum(jnp.where(same, jnp.square(diff - offset[:, None]), 0.0), axis=1)
    centered = -offset
    if normalize_std:
        centered = centered / (jnp.sqrt(squares / jnp.maximum(count - ddof, 1)) + epsilon)
    return jnp.where(mask & (count > 1), centered, 0.0)


def gigpo_advantages(episode_returns, step_rewards, state_ids,
                     step_mask: Optional[Array] = None, *, gamma=0.95, omega: float = 1.0,
                     normalize_std: bool = True, ddof: int = DEFAULT_GRPO_DDOF,
                     epsilon: float = DEFAULT_GRPO_EPSILON) -> Array:
    """GiGPO step advantages of one group: [G], [G, K], int [G, K], [G, K] → [G, K]."""
    episode_returns, step_rewards = as_float(episode_returns), as_float(step_rewards)
    state_ids = jnp.asarray(state_ids)
    if step_rewards.ndim != 2 or state_ids.shape != step_rewards.shape:
        raise ValueError(f"step_rewards and state_ids must both be [G, K], got "
                         f"{step_rewards.shape} and {state_ids.shape}")
    if episode_returns.shape != step_rewards.shape[:1]:
        raise ValueError(f"episode_returns must be [G]={step_rewards.shape[:1]}, got "
                         f"{episode_returns.shape}")
    mask = (jnp.ones(step_rewards.shape, bool) if step_mask is None
            else jnp.asarray(step_mask).astype(bool))
    if mask.shape != step_rewards.shape:
        raise ValueError(f"step_mask shape {mask.shape} must equal {step_rewards.shape}")

    present = jnp.any(mask, axis=1)
    if normalize_std:
        episode = grpo_advantages(episode_returns, present, ddof=ddof, epsilon=epsilon)
    else:
        episode = dr_grpo_advantages(episode_returns, present)
    step_returns = jax.vmap(lambda r, m: discounted_returns(r, m, gamma))(step_rewards, mask)
    step = anchor_group_advantages(step_returns.reshape(-1), state_ids.reshape(-1),
                                   mask.reshape(-1), normalize_std=normalize_std, ddof=ddof,
                                   epsilon=epsilon).reshape(step_rewards.shape)
    return jnp.where(mask, episode[:, None] + omega * step, 0.0)
