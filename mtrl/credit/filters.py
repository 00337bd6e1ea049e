"""DAPO's soft overlong punishment (Yu et al. 2025, "DAPO: An Open-Source LLM
Reinforcement Learning System at Scale"), added to the reward for a response of length L:

      0                                   L ≤ L_max − L_cache
      ((L_max − L_cache) − L) / L_cache   L_max − L_cache < L ≤ L_max
      −1                                  L > L_max

  e.g. L_max = 20480, L_cache = 4096: lengths [16000, 16384, 18432, 20480, 21000] →
  [0, 0, −0.5, −1, −1].

The sample filters have one implementation each, the one the trainer runs, in
mtrl/training/: SimpleTIR's void-turn filter on the tree (loss_mask.py, void_keep_mask)
and the zero-advantage row filter (row_filter.py; DAPO's dynamic sampling, which
over-samples, is not implemented).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array


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
