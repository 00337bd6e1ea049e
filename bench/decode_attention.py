"""Decode attention (one query per row) on a K/V cache: the grouped einsum, an
elementwise multiply-and-reduce formulation and the fused CPU kernel, paired.

    python -m bench.decode_attention --out attn.json \
        [--shapes 1x128,8x128,32x128,32x512,32x1024/600]

SmolLM2-135M's heads: 3 key/value heads of 64, 3 query heads per group; a shape is
rows x cache slots, optionally /written: only the first `written` slots hold tokens
(the sampler's cache is allocated for the whole episode; default all), a random 80% of
those visible. Arms, jitted, best of 5 means of 50 calls, float32 and bfloat16 inputs:
  einsum  mtrl.models.attention.grouped_attention (decode_attention "einsum")
  reduce  scores and outputs as broadcast products summed over an axis (no dot)
  kernel  mtrl.kernels.decode_attention (decode_attention "kernel"; reads only the
          written slots); skipped, with the reason, when the library is not built
The arms agree to float rounding (max |difference| from the einsum is recorded).
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import machine_stamp
from mtrl.kernels import library
from mtrl.kernels.decode_attention import decode_attention
from mtrl.models.attention import MASK_VALUE, grouped_attention

KV, GROUP, HEAD_DIM = 3, 3, 64


def reduce_attention(q, k, v, mask):
    """grouped_attention's formula for one block, without dot products."""
    d = q.shape[-1]
    scores = jnp.sum(q[:, :, :, :, None, :].astype(jnp.float32)
                     * k[:, None, :, None, :, :].astype(jnp.float32), axis=-1)  # [B, L, KV, G, S]
    scores = jnp.transpose(scores, (0, 2, 3, 1, 4)) * (d ** -0.5)               # [B, KV, G, L, S]
    visible = mask[:, None, None]
    probs = jax.nn.softmax(jnp.where(visible, scores, MASK_VALUE), axis=-1)
    probs = jnp.where(visible.any(-1, keepdims=True), probs, 0.0).astype(q.dtype)
    out = jnp.sum(probs[..., None].astype(jnp.float32)
                  * v[:, :, None, None, :, :].astype(jnp.float32), axis=-2)     # [B, KV, G, L, D]
    return jnp.transpose(out, (0, 3, 1, 2, 4)).astype(q.dtype)


def best_ms(fn, args, calls: int = 50, rounds: int = 5) -> float:
    jax.block_until_ready(fn(*args))
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            out = fn(*args)
        jax.block_until_ready(out)
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--shapes", default="1x128,8x128,32x128,32x512,32x1024/600")
    args = parser.parse_args()
    stamp = machine_stamp()
    einsum = jax.jit(lambda q, k, v, m: grouped_attention(q, [(k, v, m)]))
    reduce = jax.jit(reduce_attention)
    kernel = jax.jit(lambda q, k, v, m, n: decode_attention(q[:, 0], k, v, m[:, 0], n)[:, None])
    skipped = library.load()
    rng = np.random.default_rng(0)
    rows = []
    for dtype in (jnp.float32, jnp.bfloat16):
        for shape in args.shapes.split(","):
            size, _, written = shape.partition("/")
            batch, keys = map(int, size.split("x"))
            written = int(written or keys)
            q = jnp.asarray(rng.standard_normal((batch, 1, KV, GROUP, HEAD_DIM)), dtype)
            k, v = (jnp.asarray(rng.standard_normal((batch, KV, keys, HEAD_DIM)), dtype)
                    for _ in range(2))
            mask = jnp.asarray((rng.random((batch, 1, keys)) < 0.8)
                               & (np.arange(keys) < written))
            want = einsum(q, k, v, mask).astype(jnp.float32)
            diff = jnp.abs(want - reduce(q, k, v, mask).astype(jnp.float32))
            row = {"dtype": jnp.dtype(dtype).name, "rows": batch, "keys": keys,
                   "written": written,
                   "einsum_ms": best_ms(einsum, (q, k, v, mask)),
                   "reduce_ms": best_ms(reduce, (q, k, v, mask)),
                   "max_abs_diff": float(diff.max())}
            if skipped is None:
                got = kernel(q, k, v, mask, written).astype(jnp.float32)
                row["kernel_ms"] = best_ms(kernel, (q, k, v, mask, written))
                row["kernel_max_abs_diff"] = float(jnp.abs(want - got).max())
            rows.append(row)
            print(json.dumps(row), flush=True)
    write_record(args.out, {"command": f"python -m bench.decode_attention --shapes {args.shapes}",
                            "kernel_skipped": skipped, "rows": rows}, stamp)


if __name__ == "__main__":
    main()
