"""Masked reductions with safe denominators.

Every reduction here first replaces the values outside the mask with a neutral
constant (`jnp.where`, not multiplication), so an inf or a huge value at a masked
position can neither leak into the result nor turn its gradient into NaN
(0 * inf = NaN, while `where` routes a zero cotangent to the masked entries).
An all-false mask gives a finite result: 0 for sums and means, `empty_value`
for min and max.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from mtrl.losses.checks import check_bool


def _check(x: jax.Array, mask: jax.Array) -> None:
    check_bool("mask", mask)
    if jnp.shape(x) != jnp.shape(mask):
        raise ValueError(f"x has shape {jnp.shape(x)} but mask has shape {jnp.shape(mask)}")


def masked_sum(x: jax.Array, mask: jax.Array, axis: int | tuple[int, ...] | None = None) -> jax.Array:
    """Σ x over the positions where mask is true."""
    _check(x, mask)
    return jnp.sum(jnp.where(mask, x, 0), axis=axis)


def masked_count(mask: jax.Array, axis: int | tuple[int, ...] | None = None) -> jax.Array:
    """Number of true positions, as float32 (it is used as a denominator)."""
    check_bool("mask", mask)
    return jnp.sum(mask, axis=axis, dtype=jnp.float32)


def masked_mean(x: jax.Array, mask: jax.Array, axis: int | tuple[int, ...] | None = None) -> jax.Array:
    """Σ_mask x / max(Σ mask, 1): the mean over valid positions, 0 when there are none."""
    return masked_sum(x, mask, axis) / jnp.maximum(masked_count(mask, axis), 1.0)


def masked_min(x: jax.Array, mask: jax.Array, empty_value: float = 0.0) -> jax.Array:
    """Minimum over valid positions (all axes); `empty_value` when the mask is all false."""
    _check(x, mask)
    smallest = jnp.min(jnp.where(mask, x, jnp.inf))
    return jnp.where(jnp.any(mask), smallest, jnp.asarray(empty_value, smallest.dtype))


def masked_max(x: jax.Array, mask: jax.Array, empty_value: float = 0.0) -> jax.Array:
    """Maximum over valid positions (all axes); `empty_value` when the mask is all false."""
    _check(x, mask)
    largest = jnp.max(jnp.where(mask, x, -jnp.inf))
    return jnp.where(jnp.any(mask), largest, jnp.asarray(empty_value, largest.dtype))
