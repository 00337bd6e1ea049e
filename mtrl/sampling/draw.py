"""The sampled token draw, in reductions XLA:CPU runs fast.

    inverse_cdf_index(w, u) = min{ i : w_i > 0, sum_{j<=i} w_j > u * sum_j w_j }

`inverse_cdf_index` draws i with probability w_i / sum_j w_j from ONE uniform u ~ U[0, 1)
per row (inverse transform sampling), where Gumbel-max (`jax.random.categorical`)
needs V random numbers per row: on a 49,152-token vocabulary the draw (with its
log-probability) is 9.6-22x faster on a quiet machine here at 1-128 rows (bench/draw.py,
BENCHMARKS.md). jnp.argmax and jnp.cumsum lower to a
variadic reduce and a log-depth scan, both slow on XLA:CPU, so the search uses plain
min/max/sum reductions and the prefix sums are small triangular matmuls, in two levels:
a prefix sum over blocks of BLOCK tokens finds the block, a second one the token in it.

Rounding: the block and in-block prefix sums are float32, so a token's probability is
exact up to a few ulps of the row's mass; a token with w_i = 0 (a filtered one) is
never drawn, and u * total rounding up to the total falls back to the last token with
w_i > 0.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

BLOCK = 256  # tokens per block of the two-level prefix sum (49,152 = 192 blocks)


def _first_index(mask: jax.Array) -> jax.Array:
    """[..., n] bool -> [...] int32: the first True position, n where there is none."""
    n = mask.shape[-1]
    iota = jnp.arange(n, dtype=jnp.int32)
    return jnp.min(jnp.where(mask, iota, n), axis=-1)


def _last_index(mask: jax.Array) -> jax.Array:
    """[..., n] bool -> [...] int32: the last True position, -1 where there is none."""
    iota = jnp.arange(mask.shape[-1], dtype=jnp.int32)
    return jnp.max(jnp.where(mask, iota, -1), axis=-1)


def _cumsum_small(x: jax.Array) -> jax.Array:
    """Prefix sums over a short last axis (<= a few hundred) as one triangular matmul."""
    n = x.shape[-1]
    upper = jnp.triu(jnp.ones((n, n), x.dtype))  # upper[j, i] = 1 for j <= i
    return jnp.matmul(x, upper, precision=jax.lax.Precision.HIGHEST)


def inverse_cdf_index(weights: jax.Array, u: jax.Array) -> jax.Array:
    """Draw one index per row with probability weights / row sum.

    Args:
      weights: [B, V] float, >= 0 (unnormalised probabilities; 0 = never drawn), each
               row with a positive entry.
      u:       [B] float in [0, 1): one uniform per row.
    Returns:
      [B] int32 indices with weights > 0.
    """
    if weights.ndim != 2 or u.shape != weights.shape[:1]:
        raise ValueError(f"need weights [B, V] and u [B], got {weights.shape}, {u.shape}")
    rows, vocab = weights.shape
    blocks = -(-vocab // BLOCK)
    padded = jnp.pad(weights.astype(jnp.float32), ((0, 0), (0, blocks * BLOCK - vocab)))
    tiles = padded.reshape(rows, blocks, BLOCK)
    block_mass = tiles.sum(axis=-1)                                  # [B, blocks]
    block_cum = _cumsum_small(block_mass)                            # [B, blocks]
    target = u.astype(jnp.float32) * block_cum[:, -1]                # [B]
    block = _first_index((block_cum > target[:, None]) & (block_mass > 0))
    block = jnp.where(block < blocks, block, _last_index(block_mass > 0))
    inside = jnp.take_along_axis(tiles, block[:, None, None], axis=1)[:, 0]   # [B, BLOCK]
    before = jnp.take_along_axis(block_cum - block_mass, block[:, None], axis=1)  # [B, 1]
    cum = before + _cumsum_small(inside)
    offset = _first_index((cum > target[:, None]) & (inside > 0))
    offset = jnp.where(offset < BLOCK, offset, _last_index(inside > 0))
    return block * BLOCK + offset
