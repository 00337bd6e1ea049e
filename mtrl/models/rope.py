"""Rotary position embeddings (RoPE) with optional Llama 3 frequency scaling.

Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position Embedding".
For head dimension d and base theta the inverse frequencies are

  inv_freq_i = 1 / theta^(2i / d),   i = 0 .. d/2 - 1.

Convention (Hugging Face "rotate_half", not interleaved pairs): dimension i is paired
with dimension i + d/2, and with angle_i = position * inv_freq_i

  x' = x * cos(angle) + rotate_half(x) * sin(angle),  rotate_half([a, b]) = [-b, a],

where cos/sin are the d/2 angles repeated twice ([angle, angle]). Angles are computed in
float32 and cast to the activations' dtype before they multiply them, as transformers
does, so float32 runs match it to rounding.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from mtrl.models.config import Llama3RopeScaling


def inverse_frequencies(head_dim: int, theta: float,
                        scaling: Llama3RopeScaling | None = None) -> np.ndarray:
    """float32 [head_dim // 2] inverse frequencies, Llama 3 scaled when `scaling` is set.

    Llama 3.1 scaling (Meta's reference implementation and transformers'
    `_compute_llama3_parameters`): with wavelength w = 2*pi / inv_freq,
    L = original_max_position_embeddings, low = L / low_freq_factor and
    high = L / high_freq_factor,

      w > low            : inv_freq / factor
      w < high           : inv_freq
      otherwise          : (1 - s) * inv_freq / factor + s * inv_freq,
                           s = (L / w - low_freq_factor) / (high_freq_factor - low_freq_factor).
    """
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(f"head_dim must be a positive even int, got {head_dim}")
    exponents = np.arange(0, head_dim, 2, dtype=np.int64).astype(np.float32) / np.float32(head_dim)
    inv_freq = (1.0 / (np.float32(theta) ** exponents)).astype(np.float32)
    if scaling is None:
        return inv_freq
    old_len = scaling.original_max_position_embeddings
    low_wavelen = old_len / scaling.low_freq_factor
    high_wavelen = old_len / scaling.high_freq_factor
    wavelen = (2 * math.pi / inv_freq).astype(np.float32)
    scaled = np.where(wavelen > low_wavelen, inv_freq / scaling.factor, inv_freq)
    smooth = (old_len / wavelen - scaling.low_freq_factor) / (
        scaling.high_freq_factor - scaling.low_freq_factor)
    smoothed = (1 - smooth) * scaled / scaling.factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return np.where(medium, smoothed, scaled).astype(np.float32)


def rotary_cos_sin(positions: jax.Array, inv_freq: np.ndarray | jax.Array,
                   dtype: jnp.dtype) -> tuple[jax.Array, jax.Array]:
    """cos, sin of shape [B, L, head_dim] for int positions [B, L], cast to `dtype`."""
    if positions.ndim != 2:
        raise ValueError(f"positions must be [B, L], got shape {positions.shape}")
    if inv_freq.ndim != 1:
        raise ValueError(f"inv_freq must be 1-D, got shape {inv_freq.shape}")
    angles = positions.astype(jnp.float32)[..., None] * jnp.asarray(inv_freq, jnp.float32)
    angles = jnp.concatenate([angles, angles], axis=-1)
    return jnp.cos(angles).astype(dtype), jnp.sin(angles).astype(dtype)


def rotate_half(x: jax.Array) -> jax.Array:
    """[a, b] -> [-b, a] over the last axis (halves of equal size)."""
    half = x.shape[-1] // 2
    return jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rotary(x: jax.Array, cos: jax.Array, sin: jax.Array) -> jax.Array:
    """Rotate x [B, L, heads, head_dim] by cos/sin [B, L, head_dim] (shared by all heads)."""
    if x.ndim != 4:
        raise ValueError(f"x must be [B, L, heads, head_dim], got shape {x.shape}")
    if cos.shape != (x.shape[0], x.shape[1], x.shape[3]) or sin.shape != cos.shape:
        raise ValueError(f"cos/sin must be {(x.shape[0], x.shape[1], x.shape[3])}, "
                         f"got {cos.shape} and {sin.shape}")
    cos, sin = cos[:, :, None, :], sin[:, :, None, :]
    return x * cos + rotate_half(x) * sin
