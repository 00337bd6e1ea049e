"""Where a sampler decode step's time goes: XLA's ops ranked by time in one `generate`.

    python -m bench.profile_decode --out profile.json [--layers 4 --batch 32 --new-tokens 16 --arm onednn]

SmolLM2-135M widths (random init, float32 masters; --layers decoder layers), 64-token
random prompts, greedy unless --sample. First the decode step's cost by difference
(one `generate` of --new-tokens tokens minus one of 1 token, both compiled first),
then one traced `generate` (jax.profiler, a Perfetto trace under --trace-dir): the
trace's complete events summed by name, the top --top written to --out with their
call counts. XLA:CPU names its thunks after the HLO ops (fusions, custom calls such as
the oneDNN `ffi_call`s, dots), so the ranking says which ops to make cheaper.
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import tempfile
import time

import jax
import numpy as np
from flax import nnx

from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import machine_stamp
from mtrl.models import Transformer, preset
from mtrl.sampling import Sampler, SamplingConfig

ARMS = {"f32": dict(dtype="float32", matmul="xla"),
        "bf16_xla": dict(dtype="bfloat16", matmul="xla"),
        "onednn": dict(dtype="bfloat16", matmul="onednn")}


def ranked_events(trace_dir: str, top: int) -> list[dict]:
    path = sorted(glob.glob(os.path.join(trace_dir, "**", "*.trace.json.gz"), recursive=True))[-1]
    events = json.load(gzip.open(path))
    events = events["traceEvents"] if isinstance(events, dict) else events
    total, count = collections.Counter(), collections.Counter()
    for e in events:
        if e.get("ph") == "X":
            total[e["name"]] += e.get("dur", 0)
            count[e["name"]] += 1
    return [{"name": n, "ms": d / 1000, "calls": count[n]} for n, d in total.most_common(top)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--arm", choices=sorted(ARMS), default="onednn")
    parser.add_argument("--sample", action="store_true", help="temperature 1 instead of greedy")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--trace-dir", default="")
    args = parser.parse_args()
    if args.new_tokens < 2:
        parser.error("--new-tokens must be >= 2 (the step is a difference of two calls)")
    stamp = machine_stamp()
    base = preset("smollm2-135m", param_dtype="float32", num_layers=args.layers)
    sampler = Sampler(Transformer(base.replace(**ARMS[args.arm]), rngs=nnx.Rngs(0)))
    prompts = np.random.default_rng(0).integers(3, base.vocab_size - 100,
                                                size=(args.batch, 64)).tolist()

    def generate(new_tokens: int, seed: int) -> float:
        config = SamplingConfig(greedy=not args.sample, max_new_tokens=new_tokens, pad_id=0)
        start = time.perf_counter()
        sampler.generate(prompts, jax.random.key(seed), config).output.tokens.block_until_ready()
        return time.perf_counter() - start

    for n in (1, args.new_tokens):
        generate(n, 0)  # compile
    one, many = generate(1, 1), generate(args.new_tokens, 1)
    step_ms = 1000 * (many - one) / (args.new_tokens - 1)
    trace_dir = args.trace_dir or tempfile.mkdtemp(prefix="profile_decode_")
    jax.profiler.start_trace(trace_dir, create_perfetto_trace=True)
    generate(args.new_tokens, 2)
    jax.profiler.stop_trace()
    flags = [f"--{k.replace('_', '-')}" + ("" if v is True else f" {v}")
             for k, v in vars(args).items() if v not in ("", False)]
    result = {"command": "python -m bench.profile_decode " + " ".join(flags),
              "decode_step_ms": step_ms, "generate_1_s": one, "generate_n_s": many,
              "trace_dir": trace_dir, "top": ranked_events(trace_dir, args.top)}
    write_record(args.out, result, stamp)
    print(f"decode step {step_ms:.1f} ms (batch {args.batch}, {args.layers} layers, {args.arm})")
    for e in result["top"]:
        print(f"{e['ms']:10.1f} ms {e['calls']:6d}  {e['name'][:100]}")


if __name__ == "__main__":
    main()
