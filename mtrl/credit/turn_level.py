"""Turn-level credit for K-turn trajectories: discounted turn returns, MT-GRPO, tokens.

A trajectory of K turns has one reward per turn, `r_k` [K], and a `turn_mask` [K]
(false for turns that did not happen). Tokens carry a 1-based turn index (0 for
tokens that are not sampled: prompt, observations, padding), the same convention as
`RolloutBatch.turn_index`, so per-turn values reach tokens by a gather.

MT-GRPO (Zeng et al. 2025, "Reinforcing Multi-Turn Reasoning in LLM Agents via
Turn-Level Credit Assignment"): turn rewards r^T and outcome rewards r^O are
normalized separately within the group,

  A^T = (r^T − mean) / (std + ε),   A^O = (r^O − mean) / (std + ε),
  non-final-turn tokens:  A^O + λ · A^T     (lambda_on="turn", default)
  final-turn tokens:      A^O

with the unbiased std (ddof=1) and ε = 1e-4 added to the std. This placement is the
one of the authors' released trainer ("aae" advantage estimation, λ =
`turn_advantage_coef`); it reproduces G = 4, λ = 1, r^T = [1.5, 1, 0, 0.5],
r^O = [2, 0.5, 1, 0] → non-final [2.47903, −0.05187, −1.01535, −1.41181], final
[1.31731, −0.43910, 0.14637, −1.02458]. `lambda_on="outcome"` gives the other reading,
A^T + λ · A^O on non-final turns (identical at λ = 1).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from mtrl.config.fields import check_choice
from mtrl.credit.group import GROUP_ADVANTAGES, as_float, check_group, grpo_advantages

Array = jax.Array

LAMBDA_PLACEMENTS = ("turn", "outcome")
TURN_GROUPINGS = ("turn", "all")
MT_GRPO_DDOF = 1
MT_GRPO_EPSILON = 1e-4


def discounted_returns(rewards, mask: Optional[Array] = None, gamma=1.0) -> Array:
    """R_k = r_k + γ · R_{k+1} over the present turns of one trajectory: [K] → [K].

    Absent turns (mask false) are skipped: they add no reward, take no discount step,
    and their own return is 0. Computed with a reverse lax.scan in float32 (or wider)
    and returned in the rewards' dtype, so bf16/f16 rewards with a traced float32 γ
    keep one carry dtype.
    """
    rewards, mask = check_group(rewards, mask, stream="trajectory")
    if isinstance(gamma, (int, float)) and not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma}")
    out_dtype = rewards.dtype
    rewards = rewards.astype(jnp.promote_types(rewards.dtype, jnp.float32))
    gamma = jnp.asarray(gamma, rewards.dtype)

    def backward_step(next_return, turn):
        r_k, present = turn
        r_k = jnp.where(present, r_k, 0.0)
        return_k = jnp.where(present, r_k + gamma * next_return, next_return)
        return return_k, jnp.where(present, return_k, 0.0)

    _, returns = jax.lax.scan(backward_step, jnp.zeros((), rewards.dtype), (rewards, mask),
                              reverse=True)
    return returns.astype(out_dtype)


def per_turn_advantages(turn_rewards, turn_mask: Optional[Array] = None, *, gamma=1.0,
                        estimator: str = "grpo", group_by: str = "turn",
                        **estimator_opts) -> Array:
    """[G, K] turn rewards of a group of trajectories → [G, K] turn advantages.

    Each trajectory's discounted returns R_k are compared within the group by an
    GROUP_ADVANTAGES entry: group_by="turn" takes the G returns at the same turn k
    as one group (absent turns excluded); group_by="all" pools every present (g, k).
    """
    check_choice("group_by", group_by, TURN_GROUPINGS)
    turn_rewards = as_float(turn_rewards)
    if turn_rewards.ndim != 2:
        raise ValueError(f"turn_rewards must have shape [G, K], got {turn_rewards.shape}")
    mask = (jnp.ones(turn_rewards.shape, bool) if turn_mask is None
            else jnp.asarray(turn_mask).astype(bool))
    if mask.shape != turn_rewards.shape:
        raise ValueError(f"turn_mask shape {mask.shape} must equal {turn_rewards.shape}")
    returns = jax.vmap(lambda r, m: discounted_returns(r, m, gamma))(turn_rewards, mask)
    fn = GROUP_ADVANTAGES.get(estimator)
    if group_by == "all":
        flat = fn(returns.reshape(-1), mask.reshape(-1), **estimator_opts)
        return flat.reshape(returns.shape)
    per_turn = jax.vmap(lambda r, m: fn(r, m, **estimator_opts), in_axes=1, out_axes=1)
    return per_turn(returns, mask)


def broadcast_turns_to_tokens(turn_values, token_turn) -> Array:
    """values[token_turn − 1] for tokens with 1 ≤ token_turn ≤ K, else 0: [K], [L] → [L]."""
    turn_values = as_float(turn_values)
    token_turn = jnp.asarray(token_turn)
    if turn_values.ndim != 1:
        raise ValueError(f"turn_values must have shape [K], got {turn_values.shape}")
    if token_turn.ndim != 1 or not jnp.issubdtype(token_turn.dtype, jnp.integer):
        raise ValueError(f"token_turn must be an integer [L] array, got "
                         f"{token_turn.dtype}{list(token_turn.shape)}")
    num_turns = turn_values.shape[0]
    valid = (token_turn >= 1) & (token_turn <= num_turns)
    return jnp.where(valid, turn_values[jnp.clip(token_turn - 1, 0, num_turns - 1)], 0.0)


class MTGRPOAdvantages(NamedTuple):
    non_final: Array  # [G] advantage of every token of turns before the final one
    final: Array  # [G] advantage of the final turn's tokens (A^O)


def mt_grpo_advantages(turn_rewards, outcome_rewards, mask: Optional[Array] = None, *,
                       turn_coef: float = 1.0, lambda_on: str = "turn",
                       ddof: int = MT_GRPO_DDOF,
                       epsilon: float = MT_GRPO_EPSILON) -> MTGRPOAdvantages:
    """MT-GRPO advantages of one group (module docstring): [G], [G] → ([G], [G])."""
    check_choice("lambda_on", lambda_on, LAMBDA_PLACEMENTS)
    turn_rewards, outcome_rewards = as_float(turn_rewards), as_float(outcome_rewards)
    if turn_rewards.shape != outcome_rewards.shape:
        raise ValueError(f"turn_rewards {turn_rewards.shape} and outcome_rewards "
                         f"{outcome_rewards.shape} must have the same [G] shape")
    a_turn = grpo_advantages(turn_rewards, mask, ddof=ddof, epsilon=epsilon)
    a_outcome = grpo_advantages(outcome_rewards, mask, ddof=ddof, epsilon=epsilon)
    if lambda_on == "turn":
        non_final = a_outcome + turn_coef * a_turn
    else:
        non_final = a_turn + turn_coef * a_outcome
    return MTGRPOAdvantages(non_final=non_final, final=a_outcome)


def mt_grpo_token_advantages(non_final, final, token_turn, final_turn) -> Array:
    """One sequence's token advantages: turn < final_turn → non_final, == → final.

    non_final, final: scalars of one trajectory; token_turn: int [L] (1-based, 0 for
    tokens that are not sampled, which get 0); final_turn: scalar int.
    """
    non_final, final = as_float(non_final), as_float(final)
    if non_final.ndim != 0 or final.ndim != 0 or jnp.ndim(final_turn) != 0:
        raise ValueError("non_final, final and final_turn must be scalars (one trajectory); "
                         "vmap over the group")
    token_turn = jnp.asarray(token_turn)
    if token_turn.ndim != 1:
        raise ValueError(f"token_turn must have shape [L], got {token_turn.shape}")
    if not jnp.issubdtype(token_turn.dtype, jnp.integer):
        raise ValueError(f"token_turn must have an integer dtype (1-based turns), got "
                         f"{token_turn.dtype}")
    before = (token_turn >= 1) & (token_turn < final_turn)
    return jnp.where(before, non_final, jnp.where(token_turn == final_turn, final, 0.0))
