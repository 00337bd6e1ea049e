"""Sample filters and length shaping: SimpleTIR void turns, DAPO overlong and dynamic sampling.

- Void-turn filter (Xue et al. 2025, "SimpleTIR: End-to-End Reinforcement Learning for
  Multi-Turn Tool-Integrated Reasoning"): a turn is void when it produces neither a
  complete code block nor a final answer; a trajectory with any void turn is dropped
  from the policy loss (its keep mask is false).
- Soft overlong punishment (Yu et al. 2025, "DAPO: An Open-Source LLM Reinforcement
  Learning System at Scale"), added to the reward for a response of length L:

      0                                   L ≤ L_max − L_cache
      ((L_max − L_cache) − L) / L_cache   L_max − L_cache < L ≤ L_max
      −1                                  L > L_max

  e.g. L_max = 20480, L_cache = 4096: lengths [16000, 16384, 18432, 20480, 21000] →
  [0, 0, −0.5, −1, −1].
- Dynamic sampling (DAPO): keep a group only if 0 < successes < n, with n the present
  members; all-correct and all-wrong groups have zero group-relative advantage.
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp

Array = jax.Array


def _turn_flags(name: str, x, shape=None) -> Array:
    x = jnp.asarray(x).astype(bool)
    if x.ndim != 1:
        raise ValueError(f"{name} must be one trajectory of rank 1 [K], got shape {x.shape}; "
                         f"vmap over trajectories")
    if shape is not None and x.shape != shape:
        raise ValueError(f"{name} shape {x.shape} must equal {shape}")
    return x


def void_turns(has_code_block, has_final_answer, turn_mask: Optional[Array] = None) -> Array:
    """bool [K]: present turns with neither a complete code block nor a final answer."""
    code = _turn_flags("has_code_block", has_code_block)
    answer = _turn_flags("has_final_answer", has_final_answer, code.shape)
    present = (jnp.ones(code.shape, bool) if turn_mask is None
               else _turn_flags("turn_mask", turn_mask, code.shape))
    return present & ~code & ~answer


def void_turn_keep_mask(has_code_block, has_final_answer,
                        turn_mask: Optional[Array] = None) -> Array:
    """Scalar bool: keep the trajectory iff none of its present turns is void (SimpleTIR)."""
    return ~jnp.any(void_turns(has_code_block, has_final_answer, turn_mask))


def dapo_overlong_penalty(lengths, max_length: int, cache_length: int) -> Array:
    """DAPO soft overlong punishment (module docstring), elementwise over any shape."""
    if not 0 < cache_length <= max_length:
        raise ValueError(f"need 0 < cache_length <= max_length, got cache_length="
                         f"{cache_length}, max_length={max_length}")
    lengths = jnp.asarray(lengths)
    if not jnp.issubdtype(lengths.dtype, jnp.integer):
        raise ValueError(f"lengths must be integer token counts, got {lengths.dtype}")
    soft_start = max_length - cache_length
    ramp = (soft_start - lengths).astype(jnp.float32) / cache_length
    return jnp.where(lengths <= soft_start, 0.0, jnp.where(lengths <= max_length, ramp, -1.0))


def dynamic_sampling_keep(correct, mask: Optional[Array] = None) -> Array:
    """Scalar bool for one group: 0 < #correct < #present (DAPO dynamic sampling)."""
    correct = jnp.asarray(correct).astype(bool)
    if correct.ndim != 1:
        raise ValueError(f"correct must be one group of rank 1 [G], got {correct.shape}")
    present = jnp.ones(correct.shape, bool) if mask is None else jnp.asarray(mask).astype(bool)
    if present.shape != correct.shape:
        raise ValueError(f"mask shape {present.shape} must equal correct shape {correct.shape}")
    successes = jnp.sum(correct & present)
    return (successes > 0) & (successes < jnp.sum(present))
