"""Attention: the reference einsum, the chunked (query-block) path, jax's fused call.

The cache-free forward (training, log-probabilities, tree-packed updates) is where the
FLOPs and the memory of an update go. `ModelConfig.attention` picks its attention:

  auto       cuDNN on a GPU when it can run the shape (bf16/fp16 compute, head size a
             multiple of 8 up to 128), the chunked path otherwise (CPU, TPU, float32
             GPU runs).
  chunked    `chunked_attention`: queries in blocks of QUERY_BLOCK, each block's
             scores recomputed in the backward pass (flash attention's backward), so
             the largest attention buffer is [B, heads, QUERY_BLOCK, L], linear in L.
             The reference's numbers row by row (each query's softmax still runs over
             all its keys at once).
  xla        jax.nn.dot_product_attention(implementation="xla"). Its XLA (CPU)
             implementation materialises the scores: the backward keeps [B, heads, L, L]
             float32 buffers per layer (a 0.5M-parameter model asked for 6+ GB:
             BENCHMARKS.md, "Memory").
  cudnn      jax.nn.dot_product_attention(implementation="cudnn"); a GPU is required.
  reference  `grouped_attention`, the explicit einsum path (whole [B, heads, L, L]).

Masks. The cache-free forward's mask (Transformer.__call__'s token_mask and attend_end:
causal with padding, packed rows, trees laid out depth-first) admits key j for query i
iff j <= i < attend_end[j] and both tokens are real. It is passed as those O(L) factors
(`cache_free_mask` builds any block of it), so the chunked path never holds [B, L, L].
jax's fused call takes the whole boolean mask (cuDNN turns it into an additive bias),
and cuDNN is told the attention is causal so it can skip the blocks above the diagonal.
A query that sees no key (padding) would be an all-masked row, which implementations
handle differently (uniform weights, or NaN from an all -inf row, whose gradient would
poison the step even when the output is discarded): for the fused call such a query is
given its own slot to attend to and its output is set to 0, which is what the
reference returns.

The cached forward (sampling) keeps the reference: its K/V cache is head-first
([B, KV, S, D], so decode reads each head's keys contiguously) while the fused call
wants [B, S, KV, D], a copy of the whole cache per layer per decoded token.
"""

from __future__ import annotations

import functools

from typing import Sequence

import jax
import jax.numpy as jnp

from mtrl.models.config import ATTENTION as IMPLEMENTATIONS
# cuDNN flash attention's head sizes (jax checks the same before calling it).
_CUDNN_MAX_HEAD_DIM = 128
# Queries per block of the chunked path: its live scores are [B, heads, 128, L] float32
# (math.py's bins: 2 MB per bin of 1024 tokens and 4 heads).
QUERY_BLOCK = 128
# Finite stand-in for -inf: a query with no visible key gets a uniform, finite softmax
# (then zeroed), never NaN.
MASK_VALUE = -1e30


def grouped_attention(q: jax.Array, blocks: Sequence[tuple[jax.Array, jax.Array, jax.Array]]
                      ) -> jax.Array:
    """Scaled dot-product attention with grouped key/value heads over blocks of keys.

      out = softmax(mask(q k^T / sqrt(head_dim))) v     (Vaswani et al. 2017; grouped
                                                         heads: Ainslie et al. 2023)

    q [B, L, KV, G, D]: the G query heads of group j share key/value head j.
    blocks: (k, v, mask) with k, v [B, KV, S_i, D] (head-first, the KVCache layout: each
    head's keys are contiguous, so the products need no transposed copy of the cache)
    and mask [B, L, S_i] bool (True = may attend). The softmax runs jointly over all
    blocks' keys, so keys held in separate arrays need no concatenation. Scores and softmax
    are float32; probabilities are cast to q's dtype for the value product (transformers'
    eager attention does the same). A row with no visible key returns zeros.
    """
    if q.ndim != 5:
        raise ValueError(f"q must be [B, L, KV, G, D], got shape {q.shape}")
    b, l, kv, _, d = q.shape
    if not blocks:
        raise ValueError("need at least one (k, v, mask) block")
    scores, masks = [], []
    for k, v, mask in blocks:
        if (k.ndim != 4 or k.shape[:2] != (b, kv) or k.shape[3] != d
                or v.shape != k.shape):
            raise ValueError(f"k, v must be [B, {kv}, S, {d}] matching q {q.shape}; "
                             f"got {k.shape}, {v.shape}")
        if mask.shape != (b, l, k.shape[2]):
            raise ValueError(f"mask must be {(b, l, k.shape[2])}, got {mask.shape}")
        scores.append(jnp.einsum("blkgd,bksd->bkgls", q, k.astype(q.dtype),
                                 preferred_element_type=jnp.float32))
        masks.append(mask)
    scores = jnp.concatenate(scores, axis=-1) * (d ** -0.5)
    visible = jnp.concatenate(masks, axis=-1)[:, None, None, :, :]
    probs = jax.nn.softmax(jnp.where(visible, scores, MASK_VALUE), axis=-1)
    probs = jnp.where(visible.any(axis=-1, keepdims=True), probs, 0.0).astype(q.dtype)
    out, start = 0, 0
    for k, v, _ in blocks:
        size = k.shape[2]
        out = out + jnp.einsum("bkgls,bksd->blkgd", probs[..., start:start + size],
                               v.astype(q.dtype))
        start += size
    return out


def cache_free_mask(key_mask: jax.Array, attend_end: jax.Array | None,
                    queries: jax.Array | None = None, query_mask: jax.Array | None = None
                    ) -> jax.Array:
    """Rows `queries` of the cache-free forward's mask: bool [B, Q, L], True where query
    i may attend key j, i.e. j <= i < attend_end[j] and both tokens are real.

    key_mask bool [B, L] (real tokens), attend_end int32 [B, L] or None (plain causal),
    queries int32 [Q] (default all L), query_mask bool [B, Q] (default key_mask's
    entries at `queries`; queries past L, the chunked path's padding, pass False).
    """
    b, l = key_mask.shape
    keys = jnp.arange(l)
    if queries is None:
        queries, query_mask = keys, key_mask
    if query_mask is None or query_mask.shape != (b, queries.shape[0]):
        raise ValueError(f"query_mask must be [B, Q] = {(b, queries.shape[0])}")
    mask = (keys[None, :] <= queries[:, None])[None]  # [1, Q, L]
    if attend_end is not None:
        if attend_end.shape != (b, l):
            raise ValueError(f"attend_end must be {(b, l)}, got {attend_end.shape}")
        mask = mask & (queries[None, :, None] < attend_end[:, None, :])
    return mask & key_mask[:, None, :] & query_mask[:, :, None]


def chunked_attention(q: jax.Array, k: jax.Array, v: jax.Array, token_mask: jax.Array,
                      attend_end: jax.Array | None, block: int = QUERY_BLOCK) -> jax.Array:
    """`grouped_attention` under the cache-free mask, `block` queries at a time, with a
    backward pass that recomputes each block's scores (Dao et al. 2022's backward,
    blocked over queries only).

      forward   p_ij = exp(s_ij − lse_i) on visible j, s = q kᵀ/√D,  out_i = Σ_j p_ij v_j
      backward  dv = pᵀ dout,  dp = dout vᵀ,  ds = p ∘ (dp − rowsum(p ∘ dp)),
                dq = ds k/√D,  dk = dsᵀ q/√D

    q [B, L, KV, G, D], k, v [B, KV, L, D], token_mask bool [B, L], attend_end int32
    [B, L] or None (`cache_free_mask`). Queries are padded to a multiple of `block`
    (padding sees nothing and is dropped). The pass keeps q, k, v and lse [B, KV, G, L]
    for the backward; the largest live buffers are one block's [B, KV, G, block, L]
    scores and their mask, so memory is linear in L. (jax.checkpoint per block is not
    enough: the block masks depend on no differentiated input, so jax computes them in
    the forward and keeps all of them, [B, heads, L, L] booleans, for the backward.)
    Each query's softmax runs over all its keys at once, as in the reference: values
    and gradients agree with it to float32 rounding. Returns [B, L, KV, G, D] in q's
    dtype; rows whose mask is all False are 0.
    """
    if q.ndim != 5 or k.ndim != 4 or v.shape != k.shape:
        raise ValueError(f"q must be [B, L, KV, G, D] and k, v [B, KV, L, D]; got {q.shape}, "
                         f"{k.shape}, {v.shape}")
    b, l, kv, g, d = q.shape
    if k.shape != (b, kv, l, d) or token_mask.shape != (b, l):
        raise ValueError(f"k, v must be {(b, kv, l, d)} and token_mask {(b, l)}; got "
                         f"{k.shape}, {token_mask.shape}")
    if attend_end is not None and attend_end.shape != (b, l):
        raise ValueError(f"attend_end must be {(b, l)}, got {attend_end.shape}")
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}")
    return _chunked(min(block, l), q, k, v, token_mask, attend_end)


def _to_blocks(x: jax.Array, block: int) -> jax.Array:
    """[B, L, ...] -> [n, B, block, ...], L padded with zeros to n · block."""
    b, l = x.shape[:2]
    n = -(-l // block)
    x = jnp.pad(x, [(0, 0), (0, n * block - l)] + [(0, 0)] * (x.ndim - 2))
    return x.reshape(b, n, block, *x.shape[2:]).swapaxes(0, 1)


def _from_blocks(x: jax.Array, length: int) -> jax.Array:
    """[n, B, block, ...] -> [B, length, ...]."""
    n, b, block = x.shape[:3]
    return x.swapaxes(0, 1).reshape(b, n * block, *x.shape[3:])[:, :length]


def _block_probs(q_block, k, token_mask, attend_end, start, lse=None):
    """One block's float32 probabilities [B, KV, G, Bq, L] (from `lse` [B, KV, G, Bq]
    when given) and lse; the block's queries are start + [0, Bq)."""
    block = q_block.shape[1]
    # Tied to this block's queries, the mask cannot be hoisted out of the block and
    # layer loops: XLA would otherwise build every block's (every [B, L, L]) up front.
    q_block, token_mask, attend_end, start = jax.lax.optimization_barrier(
        (q_block, token_mask, attend_end, start))
    queries = start + jnp.arange(block)
    padded = jnp.pad(token_mask, ((0, 0), (0, block)))  # queries past L: padding
    query_mask = jax.lax.dynamic_slice_in_dim(padded, start, block, axis=1)
    visible = cache_free_mask(token_mask, attend_end, queries, query_mask)[:, None, None]
    scores = jnp.einsum("blkgd,bksd->bkgls", q_block, k.astype(q_block.dtype),
                        preferred_element_type=jnp.float32) * (q_block.shape[-1] ** -0.5)
    scores = jnp.where(visible, scores, MASK_VALUE)
    if lse is None:
        lse = jax.nn.logsumexp(scores, axis=-1)
    probs = jnp.where(visible.any(axis=-1, keepdims=True),
                      jnp.exp(scores - lse[..., None]), 0.0)
    return probs, lse


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _chunked(block, q, k, v, token_mask, attend_end):
    return _chunked_forward(block, q, k, v, token_mask, attend_end)[0]


def _chunked_forward(block, q, k, v, token_mask, attend_end):
    def body(start, q_block):
        probs, lse = _block_probs(q_block, k, token_mask, attend_end, start)
        out = jnp.einsum("bkgls,bksd->blkgd", probs.astype(q.dtype), v.astype(q.dtype))
        return start + block, (out, lse)

    _, (out, lse) = jax.lax.scan(body, 0, _to_blocks(q, block))  # lse [n, B, KV, G, Bq]
    return _from_blocks(out, q.shape[1]), (q, k, v, token_mask, attend_end, lse)


def _chunked_backward(block, residuals, d_out):
    q, k, v, token_mask, attend_end, lse = residuals
    scale = q.shape[-1] ** -0.5

    def body(carry, xs):
        start, dk, dv = carry
        q_block, do_block, lse_block = xs
        probs, _ = _block_probs(q_block, k, token_mask, attend_end, start, lse_block)
        do_block = do_block.astype(jnp.float32)
        dv = dv + jnp.einsum("bkgls,blkgd->bksd", probs, do_block)
        dp = jnp.einsum("blkgd,bksd->bkgls", do_block, v.astype(jnp.float32))
        ds = probs * (dp - jnp.sum(probs * dp, axis=-1, keepdims=True)) * scale
        dq = jnp.einsum("bkgls,bksd->blkgd", ds, k.astype(jnp.float32))
        dk = dk + jnp.einsum("bkgls,blkgd->bksd", ds, q_block.astype(jnp.float32))
        return (start + block, dk, dv), dq

    zeros = jnp.zeros(k.shape, jnp.float32)
    xs = (_to_blocks(q, block), _to_blocks(d_out, block), lse)
    (_, dk, dv), dq = jax.lax.scan(body, (0, zeros, zeros), xs)
    return (_from_blocks(dq, q.shape[1]).astype(q.dtype), dk.astype(k.dtype),
            dv.astype(v.dtype), None, None)


_chunked.defvjp(_chunked_forward, _chunked_backward)


def resolve_implementation(name: str, dtype, head_dim: int, backend: str | None = None) -> str:
    """'chunked' | 'xla' | 'cudnn' | 'reference' for ModelConfig.attention `name`
    (module docstring); backend defaults to jax.default_backend() (at trace time)."""
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
    return "cudnn" if cudnn_ok else "chunked"


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
