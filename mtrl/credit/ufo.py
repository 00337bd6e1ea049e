"""UFO unary-feedback reward for "try again" multi-turn reasoning.

UFO (Liu et al. 2025, "A Simple 'Try Again' Can Elicit Multi-Turn LLM Reasoning"):
after a wrong answer the model only sees a fixed unary message ("try again"), and
the episode ends at the first correct answer. One episode of T attempts scores

  reward = γ^t · [solved] − λ · (1 − E / T)

where t is the 0-indexed attempt of the first correct answer, E the number of
distinct answers among the T attempts made, and the second term penalizes repeating
an answer. Examples (γ = 0.5, λ = 0.5): correct at attempt 2 with answers [3, 3, 5] →
0.25 − 0.5·(1 − 2/3) = 0.083333; five wrong answers with 2 distinct → −0.3; correct
at once → 1.0.

Inputs are one episode: `correct` bool [T_max], `answer_ids` int [T_max] (the caller
maps each extracted answer to an id, e.g. by hashing its normalized text) and an
`attempt_mask` of the attempts that happened. Attempts after the first correct one are
ignored, since the episode stops there. An episode without attempts scores 0.
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp

Array = jax.Array


def ufo_reward(correct, answer_ids, attempt_mask: Optional[Array] = None, *,
               gamma: float, penalty_coef: float) -> Array:
    """Scalar UFO reward of one episode (module docstring); `penalty_coef` is λ."""
    correct, answer_ids = jnp.asarray(correct).astype(bool), jnp.asarray(answer_ids)
    if correct.ndim != 1 or answer_ids.shape != correct.shape:
        raise ValueError(f"correct and answer_ids must be equal rank-1 [T] arrays, got "
                         f"{correct.shape} and {answer_ids.shape}; vmap over episodes")
    if not jnp.issubdtype(answer_ids.dtype, jnp.integer):
        raise ValueError(f"answer_ids must be integers, got {answer_ids.dtype}")
    if isinstance(gamma, (int, float)) and not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma}")
    if isinstance(penalty_coef, (int, float)) and penalty_coef < 0:
        raise ValueError(f"penalty_coef must be >= 0, got {penalty_coef}")
    made = (jnp.ones(correct.shape, bool) if attempt_mask is None
            else jnp.asarray(attempt_mask).astype(bool))
    if made.shape != correct.shape:
        raise ValueError(f"attempt_mask shape {made.shape} must equal {correct.shape}")

    hits = made & correct
    solved = jnp.any(hits)
    # Attempts up to and including the first correct one.
    counted = made & (jnp.cumsum(hits) - hits == 0)
    attempts = jnp.sum(counted)
    # An answer is new if no earlier counted attempt gave the same id.
    earlier = jnp.tril(jnp.ones((correct.shape[0],) * 2, bool), k=-1)
    repeats = jnp.any(earlier & counted[None, :] & (answer_ids[:, None] == answer_ids[None, :]),
                      axis=1)
    distinct = jnp.sum(counted & ~repeats)
    solve_reward = jnp.where(solved, jnp.power(gamma, jnp.maximum(attempts - 1, 0)), 0.0)
    diversity_penalty = penalty_coef * (1.0 - distinct / jnp.maximum(attempts, 1))
    return jnp.where(attempts > 0, solve_reward - diversity_penalty, 0.0)
