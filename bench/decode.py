"""The sampler's decode at batch 1, 8, 32 against this CPU's roofline, per numerics arm.

    python -m bench.decode --out /tmp/decode.json [--batches 1,8,32]

SmolLM2-135M-shaped model (preset `smollm2-135m`, random init, float32 master weights),
64-token prompts, --new-tokens greedy tokens per row (no stop token), one `generate`
call per measurement (prefill included). Arms:

  f32                 model.dtype float32: the sampler reads float32 weights
  f32_einsum          the same with decode_attention "einsum" (XLA's grouped einsum over
                      every cache slot) instead of the fused CPU kernel
  bf16_xla            model.dtype bfloat16, matmul "xla": the sampler's bf16 weight copy
  bf16_onednn         the same on oneDNN
  bf16_onednn_einsum  bf16_onednn with decode_attention "einsum"
Arms that need the kernel library are skipped, with the reason, when it is not built.

Roofline per arm and batch, both bounds measured in this run:
  bandwidth bound  = batch * bandwidth / bytes one decode step reads (the sampler's
                     weights in their dtype + every row's whole K/V cache),
  compute bound    = matmul peak / (2 * parameters per token), the peak being the
                     arm's [2048]^2 matmul (XLA float32, XLA or oneDNN bf16),
  roofline         = the lower of the two (tokens/s).
Calls alternate over the arms (--repeats rounds); medians of wall time and of process
CPU time are reported with the load average (the machine is shared).
"""

from __future__ import annotations

import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from bench.smollm2_shape import model_overrides, smollm2_parser
from mtrl.evidence import timing
from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import machine_stamp
from mtrl.kernels import onednn_matmul
from mtrl.models import Transformer, preset
from mtrl.sampling import Sampler, SamplingConfig

ARMS = {"f32": dict(dtype="float32", matmul="xla", decode_attention="kernel"),
        "f32_einsum": dict(dtype="float32", matmul="xla", decode_attention="einsum"),
        "bf16_xla": dict(dtype="bfloat16", matmul="xla", decode_attention="kernel"),
        "bf16_onednn": dict(dtype="bfloat16", matmul="onednn", decode_attention="kernel"),
        "bf16_onednn_einsum": dict(dtype="bfloat16", matmul="onednn",
                                   decode_attention="einsum")}


def unmet_needs(arm: dict) -> str | None:
    """Why the arm cannot run here (the kernel library, or oneDNN's bf16 matmul on
    this CPU), or None."""
    if arm["matmul"] == "onednn" and not onednn_matmul.usable():
        return onednn_matmul.unusable_reason()
    if arm["decode_attention"] == "kernel" and not onednn_matmul.available():
        return onednn_matmul.load()
    return None


def best_seconds(fn, repeats: int = 5) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bandwidth_gb_s() -> float:
    src = np.ones(64 * 2 ** 20, np.float64)
    dst = np.empty_like(src)
    return 2 * src.nbytes / best_seconds(lambda: np.copyto(dst, src)) / 1e9


def peak_gflops(arm: str, n: int = 2048) -> float:
    dtype = jnp.float32 if arm.startswith("f32") else jnp.bfloat16
    a = jnp.asarray(np.random.default_rng(0).standard_normal((n, n)), dtype)
    if arm.startswith("bf16_onednn"):
        dot = jax.jit(lambda x, y: onednn_matmul.matmul(x, y))
    else:
        dot = jax.jit(lambda x, y: jnp.dot(x, y, preferred_element_type=jnp.float32))
    return 2 * n ** 3 / best_seconds(lambda: dot(a, a).block_until_ready()) / 1e9


def main() -> None:
    parser = smollm2_parser(__doc__, ARMS, "2 layers, batch 1, 4 tokens")
    parser.add_argument("--batches", default="1,8,32")
    parser.add_argument("--prompt-len", type=int, default=64)
    parser.add_argument("--new-tokens", type=int, default=64)
    args = parser.parse_args()
    overrides = model_overrides(args)
    if args.smoke:
        args.batches, args.new_tokens, args.repeats, args.prompt_len = "1", 4, 1, 8
    batches = [int(b) for b in args.batches.split(",")]
    stamp = machine_stamp()
    base = preset("smollm2-135m", **overrides)
    config = SamplingConfig(greedy=True, max_new_tokens=args.new_tokens, pad_id=0)
    result = {"config": {"batches": batches, "prompt_len": args.prompt_len,
                         "new_tokens": args.new_tokens, "layers": base.num_layers,
                         "command": " ".join(sys.argv)},
              "bandwidth_gb_s": bandwidth_gb_s(), "arms": {}, "skipped": {}}
    samplers, peaks = {}, {}
    for name in args.arms.split(","):
        why = unmet_needs(ARMS[name])
        if why:
            result["skipped"][name] = why
            continue
        model = Transformer(base.replace(**ARMS[name]), rngs=nnx.Rngs(0))
        samplers[name] = Sampler(model)
        peaks[name] = peak_gflops(name)
    rng = np.random.default_rng(0)
    prompts = {b: [list(rng.integers(3, base.vocab_size, args.prompt_len)) for _ in range(b)]
               for b in batches}
    calls = {(n, b): [] for n in samplers for b in batches}
    compile_s = {}
    for name, sampler in samplers.items():
        for b in batches:
            start = time.perf_counter()
            sampler.generate(prompts[b], jax.random.key(0), config).output.tokens.block_until_ready()
            compile_s[f"{name}/{b}"] = time.perf_counter() - start
    for r in range(args.repeats):
        for name in (list(samplers) if r % 2 == 0 else list(samplers)[::-1]):
            for b in batches:
                _, record = timing.timed(
                    lambda: samplers[name].generate(prompts[b], jax.random.key(r), config)
                    .output.tokens.block_until_ready())
                calls[(name, b)].append(record)
    params = sum(x.size for x in jax.tree.leaves(nnx.state(Transformer(base, rngs=nnx.Rngs(0)))))
    flops_per_token = 2 * params  # tied embedding counted once: it is the output layer
    kv_bytes_per_slot = base.num_layers * 2 * base.num_kv_heads * base.head_dim
    slots = args.prompt_len + args.new_tokens
    for name, sampler in samplers.items():
        weight_bytes = sum(x.nbytes for x in jax.tree.leaves(sampler.state))
        cache_bytes = kv_bytes_per_slot * slots * jnp.dtype(base.replace(**ARMS[name]).dtype).itemsize
        rows = {}
        for b in batches:
            wall = statistics.median(c["wall_s"] for c in calls[(name, b)])
            cpu = statistics.median(c["cpu_s"] for c in calls[(name, b)])
            tok_s = b * args.new_tokens / wall
            bw_bound = b * result["bandwidth_gb_s"] * 1e9 / (weight_bytes + b * cache_bytes)
            compute_bound = peaks[name] * 1e9 / flops_per_token
            roof = min(bw_bound, compute_bound)
            rows[b] = {"tok_s": tok_s, "tok_per_cpu_s": b * args.new_tokens / cpu,
                       "wall_s": wall, "cpu_s": cpu, "bandwidth_bound": bw_bound,
                       "compute_bound": compute_bound, "roofline": roof,
                       "of_roofline": tok_s / roof, "compile_s": compile_s[f"{name}/{b}"],
                       "calls": calls[(name, b)]}
            print(f"{name:>12} batch {b:3d}: {tok_s:7.1f} tok/s  "
                  f"({b * args.new_tokens / cpu:7.1f} per CPU-s)  roofline {roof:7.1f} "
                  f"(bw {bw_bound:.1f}, compute {compute_bound:.1f})  {tok_s / roof:.1%}",
                  flush=True)
        result["arms"][name] = {"peak_gflops": peaks[name], "weight_bytes": weight_bytes,
                                "compiles": sampler.num_compiles, "batches": rows}
    print(f"bandwidth {result['bandwidth_gb_s']:.1f} GB/s, peaks "
          + ", ".join(f"{k} {v:.0f}" for k, v in peaks.items()) + " GFLOP/s")
    write_record(args.out, result, stamp)


if __name__ == "__main__":
    main()
