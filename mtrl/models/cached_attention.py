"""How a cached forward's queries attend: the einsum, or the fused CPU decode kernel.

ModelConfig.decode_attention picks it, when traced, for a step that adds one token
per row (decode); chunks of several tokens (prefill, a turn's feedback) always take
the einsum (`grouped_attention`), whose dots are large enough there.

  "einsum"  mtrl.models.attention.grouped_attention: XLA runs B * KV small
            [G, D] x [D, S] dots over every slot of the cache, written or not.
  "kernel"  mtrl.kernels.decode_attention (an FFI custom call): each (row, key head)
            pair reads its keys and values once, only slots below index + 1, in
            parallel. Same formula; float32 results agree to ~1e-6, bfloat16 to a
            rounding (tests/models/test_cached_attention.py). Needs the built kernel
            library on a CPU backend; fails in one line otherwise.
  "auto"    "kernel" on a CPU backend with one device (GSPMD cannot partition the
            custom call) and the library built; "einsum" otherwise. Printed once.
"""

from __future__ import annotations

import jax

from mtrl.kernels import decode_attention as kernel
from mtrl.kernels import library
from mtrl.models.attention import grouped_attention
from mtrl.models.config import DECODE_ATTENTIONS

_PRINTED: set[str] = set()


def auto_choice() -> tuple[str, str]:
    """("kernel" | "einsum", why) for decode_attention="auto" in this process."""
    if jax.default_backend() != "cpu":
        return "einsum", f"backend {jax.default_backend()}"
    if jax.device_count() > 1:  # GSPMD cannot partition the custom call
        return "einsum", f"{jax.device_count()} devices"
    reason = library.load()
    if reason is not None:
        return "einsum", reason
    return "kernel", "CPU backend, kernel library loaded"


def resolve_decode_attention(choice: str) -> str:
    """The implementation `choice` runs ("einsum" | "kernel"); prints auto's choice once."""
    if choice not in DECODE_ATTENTIONS:
        raise ValueError(f"decode_attention must be one of {DECODE_ATTENTIONS}, got {choice!r}")
    if choice == "einsum":
        return "einsum"
    if choice == "kernel":
        library.require("decode attention kernel")
        return "kernel"
    resolved, why = auto_choice()
    message = f"mtrl: decode_attention auto -> {resolved} ({why})"
    if message not in _PRINTED:
        _PRINTED.add(message)
        print(message, flush=True)
    return resolved


def cached_attention(q: jax.Array, k_cache: jax.Array, v_cache: jax.Array, mask: jax.Array,
                     index: jax.Array, choice: str) -> jax.Array:
    """Attention of L new queries over a layer's cache (new tokens already written).

    q [B, L, KV, G, D], k_cache, v_cache [B, KV, S, D], mask bool [B, L, S] (admits
    only slots below index + L), index int32 [] (the first new token's slot) ->
    [B, L, KV, G, D]. One token per row (L = 1) goes to `choice`'s implementation,
    longer chunks to the einsum.
    """
    if q.ndim != 5 or mask.ndim != 3 or mask.shape[:2] != q.shape[:2]:
        raise ValueError(f"q must be [B, L, KV, G, D] and mask [B, L, S]; got {q.shape}, "
                         f"{mask.shape}")
    if q.shape[1] == 1 and resolve_decode_attention(choice) == "kernel":
        return kernel.decode_attention(q[:, 0], k_cache, v_cache, mask[:, 0], index + 1)[:, None]
    return grouped_attention(q, [(k_cache, v_cache, mask)])
