"""Attention of the cache-free forward through `jax.nn.dot_product_attention`.

The cache-free forward (training, log-probabilities, tree-packed updates) is where the
FLOPs of an update go: its attention runs through jax's fused entry point, whose cuDNN
implementation is flash attention on NVIDIA GPUs. `ModelConfig.attention` picks:

  auto       cuDNN on a GPU when it can run the shape (bf16/fp16 compute, head size a
             multiple of 8 up to 128), XLA's implementation otherwise (CPU, TPU,
             float32 GPU runs). jax's own default (implementation=None) is XLA's
             everywhere today, hence the explicit choice.
  xla        jax.nn.dot_product_attention(implementation="xla").
  cudnn      jax.nn.dot_product_attention(implementation="cudnn"); a GPU is required.
  reference  mtrl.models.layers.grouped_attention, the explicit einsum path.

Masks. Every mask the model builds (causal with padding, packed rows, trees laid out
depth-first: Transformer.__call__'s attend_end) is an arbitrary boolean [B, L, L] that
admits only keys j <= i. jax takes it as `mask` (cuDNN turns it into an additive bias),
and cuDNN is told the attention is causal so it can skip the blocks above the diagonal.
A query that sees no key (padding) would be an all-masked row, which implementations
handle differently (uniform weights, or NaN from an all -inf row, whose gradient would
poison the step even when the output is discarded): such a query is given its own slot
to attend to and its output is set to 0, which is what the reference returns.

The cached forward (sampling) keeps the reference: its K/V cache is head-first
([B, KV, S, D], so decode reads each head's keys contiguously) while the fused call
wants [B, S, KV, D], a copy of the whole cache per layer per decoded token.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from mtrl.models.config import ATTENTION as IMPLEMENTATIONS
# cuDNN flash attention's head sizes (jax checks the same before calling it).
_CUDNN_MAX_HEAD_DIM = 128


def resolve_implementation(name: str, dtype, head_dim: int, backend: str | None = None) -> str:
    """'xla' | 'cudnn' | 'reference' for ModelConfig.attention `name` (module docstring);
    backend defaults to jax.default_backend() (at trace time)."""
    if name not in IMPLEMENTATIONS:
        raise ValueError(f"attention must be one of {IMPLEMENTATIONS}, got {name!r}")
    backend = jax.default_backend() if backend is None else backend
    if name == "cudnn" and backend != "gpu":
        raise ValueError(f"ModelConfig.attention='cudnn' needs a GPU; jax's backend is "
                         f"{backend!r} (use 'auto' or 'xla')")
    if name != "auto":
        return name
    cudnn_ok = (backend == "gpu" and jnp.dtype(dtype) in (jnp.bfloat16, jnp.float16)
                and head_dim % 8 == 0 and head_dim <= _CUDNN_MAX_HEAD_DIM)
    return "cudnn" if cudnn_ok else "xla"


def fused_attention(q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array,
                    implementation: str) -> jax.Array:
    """softmax(mask(q kᵀ / √D)) v through jax.nn.dot_product_attention.

    q [B, L, KV, G, D] (query head h = kv·G + g uses key/value head kv, the layout of
    Attention.project), k, v [B, KV, L, D] (head-first), mask [B, L, L] bool (query i
    may attend key j), a subset of j <= i. implementation 'xla' | 'cudnn'. Returns
    [B, L, KV, G, D] in q's dtype; rows whose mask is all False are 0.
    """
    if q.ndim != 5 or k.ndim != 4 or v.shape != k.shape:
        raise ValueError(f"q must be [B, L, KV, G, D] and k, v [B, KV, L, D]; got {q.shape}, "
                         f"{k.shape}, {v.shape}")
    b, l, kv, g, d = q.shape
    if k.shape != (b, kv, l, d) or mask.shape != (b, l, l):
        raise ValueError(f"k, v must be {(b, kv, l, d)} and mask {(b, l, l)}; got {k.shape}, "
                         f"{mask.shape}")
    if implementation not in ("xla", "cudnn"):
        raise ValueError(f"implementation must be 'xla' or 'cudnn', got {implementation!r}")
    sees_any = mask.any(axis=-1)  # [B, L]
    own_slot = jnp.eye(l, dtype=bool)[None] & ~sees_any[:, :, None]
    out = jax.nn.dot_product_attention(
        q.reshape(b, l, kv * g, d), k.transpose(0, 2, 1, 3).astype(q.dtype),
        v.transpose(0, 2, 1, 3).astype(q.dtype), mask=(mask | own_slot)[:, None],
        is_causal=implementation == "cudnn", implementation=implementation)
    out = jnp.where(sees_any[:, :, None, None], out, jnp.zeros((), out.dtype))
    return out.reshape(b, l, kv, g, d)
