"""Where a train step's time goes: XLA's ops ranked by time in one traced update.

    python -m bench.profile_update --out profile.json [--layers 4 --rows 8 --length 192 --arm bf16_onednn]

bench/update_bf16.py's update (one MAGRPO step, AdamW, float32 masters, random
SmolLM2-135M-shaped model with --layers decoder layers, padded rows, no remat)
compiled, timed once, then traced (jax.profiler, a Perfetto trace under --trace-dir):
the trace's complete events summed by name (profile_decode.ranked_events), the top
--top written to --out with their call counts and their share of the step.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import jax

from bench.profile_decode import ranked_events
from bench.update_bf16 import ARMS, build_arm, rows_for, timed_call
from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import machine_stamp
from mtrl.models import preset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--length", type=int, default=192)
    parser.add_argument("--arm", choices=sorted(ARMS), default="bf16_onednn")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--trace-dir", default="")
    args = parser.parse_args()
    stamp = machine_stamp()
    base = preset("smollm2-135m", param_dtype="float32", num_layers=args.layers)
    config = base.replace(**ARMS[args.arm])
    batch = rows_for(args.rows, args.length, base.vocab_size)
    arm = build_arm(config, batch)
    step_s = timed_call(arm, batch)["wall_s"]
    trace_dir = args.trace_dir or tempfile.mkdtemp(prefix="profile_update_")
    jax.profiler.start_trace(trace_dir, create_perfetto_trace=True)
    start = time.perf_counter()
    timed_call(arm, batch)
    traced_s = time.perf_counter() - start
    jax.profiler.stop_trace()
    top = ranked_events(trace_dir, args.top)
    flops = 6 * arm["params"] * args.rows * args.length
    flags = [f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v != ""]
    result = {"command": "python -m bench.profile_update " + " ".join(flags),
              "step_s": step_s, "traced_step_s": traced_s, "compile_s": arm["compile_s"],
              "model_gflops": flops / step_s / 1e9, "trace_dir": trace_dir,
              "top": [{**e, "share": e["ms"] / 1000 / traced_s} for e in top]}
    write_record(args.out, result, stamp)
    print(f"update {step_s:.2f} s ({flops / step_s / 1e9:.0f} model GFLOP/s), "
          f"{args.layers} layers, {args.rows} x {args.length}, {args.arm}")
    for e in result["top"]:
        print(f"{e['ms']:10.1f} ms {e['calls']:6d} {e['share']:6.1%}  {e['name'][:90]}")


if __name__ == "__main__":
    main()
