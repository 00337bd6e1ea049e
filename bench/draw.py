"""The sampler's per-step token draw on a SmolLM2-sized vocabulary, old against new.

    python -m bench.draw --out draw.json [--vocab 49152 --batches 1,8,32,128]

Per batch size, jitted, float32 logits [B, V] (temperature 1, no filters), alternated
over --rounds rounds, best of --repeats calls each:
  gumbel     the earlier draw: vmap(jax.random.categorical) over
             fold_in row keys, plus log_softmax for the token's log-probability
  inverse    mtrl.sampling.filters.sample_tokens: one uniform per row, the two-level
             inverse CDF of mtrl.sampling.draw
  argmax     jnp.argmax, the greedy draw (for scale)
Milliseconds per call and the machine stamp (load before and after) go to --out.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import machine_stamp
from mtrl.sampling import SamplingConfig
from mtrl.sampling.filters import greedy_tokens, sample_tokens


def gumbel_draw(key, logits):
    keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(
        key, jnp.arange(logits.shape[0], dtype=jnp.uint32))
    tokens = jax.vmap(jax.random.categorical)(keys, logits).astype(jnp.int32)
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    return tokens, jnp.take_along_axis(log_probs, tokens[:, None], axis=-1)[:, 0]


ARMS = {
    "gumbel": jax.jit(gumbel_draw),
    "inverse": jax.jit(lambda key, z: sample_tokens(key, z, SamplingConfig())),
    "argmax": jax.jit(lambda key, z: greedy_tokens(z)),
}


def best_ms(fn, key, logits, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(key, logits))
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--vocab", type=int, default=49152)
    parser.add_argument("--batches", default="1,8,32,128")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    key = jax.random.key(0)
    stamp = machine_stamp()
    result = {"command": "python -m bench.draw " + " ".join(
                  f"--{k} {v}" for k, v in vars(args).items()), "ms": {}}
    for batch in map(int, args.batches.split(",")):
        logits = jnp.asarray(np.random.default_rng(batch).standard_normal(
            (batch, args.vocab)) * 3, jnp.float32)
        for fn in ARMS.values():
            jax.block_until_ready(fn(key, logits))  # compile
        times = {name: [] for name in ARMS}
        for r in range(args.rounds):
            for name in (list(ARMS) if r % 2 == 0 else list(ARMS)[::-1]):
                times[name].append(best_ms(ARMS[name], key, logits, args.repeats))
        result["ms"][str(batch)] = {name: min(t) for name, t in times.items()}
        row = result["ms"][str(batch)]
        print(f"batch {batch:4d}: " + "  ".join(f"{n} {v:8.3f} ms" for n, v in row.items())
              + f"  gumbel/inverse {row['gumbel'] / row['inverse']:.1f}x", flush=True)
    write_record(args.out, result, stamp)


if __name__ == "__main__":
    main()
