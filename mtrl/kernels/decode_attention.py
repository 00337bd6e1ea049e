"""Fused decode attention (one query per row) on the CPU, as an XLA:CPU FFI custom call.

    decode_attention(q, k, v, mask, limit) -> [B, KV, G, D] in q's dtype
        out[b, h, g] = sum_s p[b, h, g, s] v[b, h, s],
        p = softmax_s(q[b, h, g] . k[b, h, s] / sqrt(D)) over s < limit with mask[b, s]

q [B, KV, G, D] (the G query heads sharing key/value head h), k, v [B, KV, S, D] (the
KVCache's head-first layout), mask bool [B, S], limit int32 []: slots at or past it are
not read (the cache's unwritten tail), so a decode step costs the tokens written, not
the slots allocated. All float32 or all bfloat16; scores, softmax and sums float32, and
with bfloat16 the probabilities are rounded to bfloat16 before the value product (the
order of mtrl.models.attention.grouped_attention). A row with no visible key returns
zeros. (B, KV) pairs run in parallel on OpenMP threads (decode_attention.cc).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from mtrl.kernels import library

TARGET = "mtrl_decode_attention"


def decode_attention(q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array,
                     limit: jax.Array) -> jax.Array:
    """See the module docstring. No gradient: the sampler's forward only."""
    if q.ndim != 4 or k.ndim != 4 or v.shape != k.shape:
        raise ValueError(f"q must be [B, KV, G, D] and k, v [B, KV, S, D]; got {q.shape}, "
                         f"{k.shape}, {v.shape}")
    b, kv, _, d = q.shape
    if k.shape[:2] != (b, kv) or k.shape[3] != d:
        raise ValueError(f"k, v must be [{b}, {kv}, S, {d}], got {k.shape}")
    if mask.shape != (b, k.shape[2]) or mask.dtype != jnp.bool_:
        raise ValueError(f"mask must be bool {(b, k.shape[2])}, got {mask.dtype} {mask.shape}")
    if q.dtype not in (jnp.float32, jnp.bfloat16):
        raise ValueError(f"decode_attention takes float32 or bfloat16, got {q.dtype}")
    library.require("decode attention kernel")
    call = jax.ffi.ffi_call(TARGET, jax.ShapeDtypeStruct(q.shape, q.dtype),
                            vmap_method="sequential")
    return call(q, k.astype(q.dtype), v.astype(q.dtype), mask,
                jnp.asarray(limit, jnp.int32).reshape(()))
