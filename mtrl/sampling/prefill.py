"""Prefill: write a chunk of tokens into the KV cache and return each row's next-token
logits. Appending a chunk to a cache that already holds a history is the same operation
("cache extension"): multi-turn histories are append-only, so a child turn encodes only
its new tokens and attends to the parent's cached keys and values.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from mtrl.models.kv_cache import KVCache


def chunk_positions(cache: KVCache, token_mask: jax.Array) -> jax.Array:
    """Rotary positions of a chunk [B, L] int32: the number of real tokens before each
    token in its row, i.e. the row's cached real tokens plus the real tokens earlier in
    the chunk. Padding tokens get the position of the next real token (unused)."""
    mask = token_mask.astype(jnp.int32)
    return cache.num_tokens()[:, None] + jnp.cumsum(mask, axis=1) - mask


def last_valid_logits(logits: jax.Array, token_mask: jax.Array) -> jax.Array:
    """[B, L, V], [B, L] -> [B, V]: logits (or any per-token features, e.g. hidden
    states) at each row's last real token of the chunk, as float32.

    Rows with no real token get zeros (a uniform distribution): they have nothing to
    predict from and must be given a zero token budget by the caller.
    """
    if logits.ndim != 3 or token_mask.shape != logits.shape[:2]:
        raise ValueError(
            f"need logits [B, L, V] and token_mask [B, L], got {logits.shape}, {token_mask.shape}")
    count = token_mask.sum(axis=1).astype(jnp.int32)
    # Real tokens need not be contiguous; the last one is the largest masked index.
    seq = jnp.arange(token_mask.shape[1], dtype=jnp.int32)
    last = jnp.max(jnp.where(token_mask, seq[None, :], -1), axis=1)
    picked = jnp.take_along_axis(logits, jnp.maximum(last, 0)[:, None, None], axis=1)[:, 0]
    return jnp.where((count > 0)[:, None], picked, 0.0).astype(jnp.float32)


def prefill(graphdef: nnx.GraphDef, state: nnx.State, cache: KVCache, tokens: jax.Array,
            token_mask: jax.Array) -> tuple[KVCache, jax.Array]:
    """Encode `tokens` [B, L] at cache slots [index, index + L); return (cache, [B, V]).

    Functional over a split NNX model (`graphdef, state = nnx.split(model)`) so that
    `state` can be a traced argument: jit with `graphdef` static, and `jax.vmap` over
    (state, cache, tokens, token_mask) runs several agents' stacked parameters in one
    call. Rows may hold different numbers of real tokens (`token_mask` True); padding is
    written to its slot but marked invalid, so it is never attended to. The returned
    logits are float32 at each row's last real token (zeros for rows with none).

    The caller must leave room: cache.index + L <= cache.max_len (slots are not checked
    inside jit; `Sampler` guarantees it on the host).
    """
    if tokens.ndim != 2:
        raise ValueError(f"tokens must be [B, L], got shape {tokens.shape}")
    if token_mask.shape != tokens.shape:
        raise ValueError(f"token_mask {token_mask.shape} must match tokens {tokens.shape}")
    if cache.batch != tokens.shape[0]:
        raise ValueError(f"cache batch {cache.batch} != tokens batch {tokens.shape[0]}")
    if tokens.shape[1] > cache.max_len:
        raise ValueError(f"chunk of {tokens.shape[1]} tokens exceeds the cache ({cache.max_len})")
    token_mask = token_mask.astype(bool)
    model = nnx.merge(graphdef, state)
    positions = chunk_positions(cache, token_mask)
    hidden, cache = model.hidden_states(tokens, positions=positions, token_mask=token_mask,
                                        cache=cache)
    # Only the last real token's logits are needed: project one hidden state per row
    # instead of all L (the vocabulary projection of a whole chunk is wasted work).
    last_hidden = last_valid_logits(hidden, token_mask).astype(hidden.dtype)
    logits = model.logits(last_hidden)
    has_token = token_mask.any(axis=1)[:, None]
    return cache, jnp.where(has_token, logits, 0.0).astype(jnp.float32)
