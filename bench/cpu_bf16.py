"""This CPU's matmul peaks, f32 and bf16, per library and XLA option, in one paired run.

    python -m bench.cpu_bf16 --out /tmp/cpu_bf16.json \
        [--jax-python /work/venv-jax012/bin/python] [--rounds 3]

Arms (each a worker subprocess, bench/workers.py, so XLA flags and library versions do
not mix; the rounds alternate the arms so that the shared machine's load falls on all
alike):

  torch           torch.matmul (oneDNN/MKL; the reference for what the CPU does)
  xla             jax.jit(jnp.dot) at jax's defaults
  xla_onednn      XLA_FLAGS=--xla_cpu_use_onednn=true (jaxlib may not know the flag:
                  then the worker's error is recorded)
  xla_ynn         --xla_cpu_experimental_ynn_fusion_type=... (jax >= 0.11 flag names)
  xla_jax012      jax 0.12 at its defaults, run by --jax-python (a side venv)
  onednn          mtrl.kernels' jax.ffi custom call into oneDNN (when built)

Shapes: 2048^2 square; SmolLM2-135M's update (8 rows x 192 tokens = 1536 rows: q/o
576x576, k/v 576x192, gate/up 576x1536, down 1536x576, logits 576x49152); decode at
batch 1, 8, 32 (the same weights). bf16 means bf16 inputs, float32 accumulation and
output (preferred_element_type=float32). GFLOP/s = 2MKN / best time of --repeats.
Also: memory bandwidth (numpy copy of 512 MiB; bytes read + written), the decode
roofline inputs. The JSON records load averages before and after every round (and the
run's machine stamp: mtrl/evidence/stamp.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

# Top-level imports stay standard library only: a worker may run under another venv's
# Python (--jax-python) where mtrl's dependencies are not installed.
from bench.workers import run_module

D, F, V, KV = 576, 1536, 49152, 192
UPDATE_ROWS = 8 * 192
SHAPES = {"square2048": (2048, 2048, 2048)}
for _name, (_k, _n) in {"qo": (D, D), "kv": (D, KV), "gate_up": (D, F), "down": (F, D),
                        "logits": (D, V)}.items():
    SHAPES[f"update_{_name}"] = (UPDATE_ROWS, _k, _n)
    for _b in (1, 8, 32):
        SHAPES[f"decode{_b}_{_name}"] = (_b, _k, _n)

ARMS = {
    "torch": ("torch", ""),
    "xla": ("jax", ""),
    "xla_onednn": ("jax", "--xla_cpu_use_onednn=true"),
    "xla_ynn": ("jax", "--xla_cpu_experimental_ynn_fusion_type=dot,eltwise"),
    "xla_jax012": ("jax012", ""),
    "onednn": ("onednn", ""),
}


def time_best(fn, repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bandwidth_gb_s(repeats: int) -> float:
    import numpy as np
    src = np.ones(64 * 2**20, np.float64)
    dst = np.empty_like(src)
    seconds = time_best(lambda: np.copyto(dst, src), repeats)
    return 2 * src.nbytes / seconds / 1e9


def worker(kind: str, shapes: list[str], repeats: int) -> dict:
    """Best GFLOP/s per (shape, dtype) for one library."""
    import numpy as np
    out = {"versions": {}, "gflops": {}}
    rng = np.random.default_rng(0)
    if kind == "torch":
        import torch
        out["versions"]["torch"] = torch.__version__
        out["threads"] = torch.get_num_threads()
        for name in shapes:
            m, k, n = SHAPES[name]
            for dtype, tdt in (("f32", torch.float32), ("bf16", torch.bfloat16)):
                a = torch.from_numpy(rng.standard_normal((m, k), np.float32)).to(tdt)
                b = torch.from_numpy(rng.standard_normal((k, n), np.float32)).to(tdt)
                s = time_best(lambda a=a, b=b: torch.matmul(a, b), repeats)
                out["gflops"][f"{name}/{dtype}"] = 2 * m * k * n / s / 1e9
        return out
    import jax
    import jax.numpy as jnp
    out["versions"]["jax"] = jax.__version__
    out["xla_flags"] = os.environ.get("XLA_FLAGS", "")
    if kind == "onednn":
        from mtrl.kernels import onednn_matmul
        onednn_matmul.require()
        dots = {"bf16": jax.jit(lambda a, b: onednn_matmul.matmul(a, b))}
        dtypes = {"bf16": jnp.bfloat16}
    else:
        dots = {"f32": jax.jit(jnp.dot),
                "bf16": jax.jit(lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32))}
        dtypes = {"f32": jnp.float32, "bf16": jnp.bfloat16}
    for name in shapes:
        m, k, n = SHAPES[name]
        for dtype, dot in dots.items():
            a = jnp.asarray(rng.standard_normal((m, k), np.float32), dtypes[dtype])
            b = jnp.asarray(rng.standard_normal((k, n), np.float32), dtypes[dtype])
            s = time_best(lambda a=a, b=b, dot=dot: dot(a, b).block_until_ready(), repeats)
            out["gflops"][f"{name}/{dtype}"] = 2 * m * k * n / s / 1e9
    return out


def run_arm(arm: str, args, shapes: list[str]) -> dict:
    kind, flags = ARMS[arm]
    python = sys.executable
    if kind == "jax012":
        if not args.jax_python:
            return {"error": "no --jax-python given"}
        python, kind = args.jax_python, "jax"
    env = dict(os.environ)
    if flags:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + flags).strip()
    proc = run_module("bench.cpu_bf16", ["--worker", kind, "--shapes", ",".join(shapes),
                                         "--repeats", str(args.repeats), "--out", "-"],
                      python, env)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip()
                else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def summarize(rounds: list[dict]) -> dict:
    """Per arm and shape/dtype: the best GFLOP/s over rounds (and the spread)."""
    table: dict = {}
    for record in rounds:
        for arm, result in record["arms"].items():
            for key, value in result.get("gflops", {}).items():
                table.setdefault(arm, {}).setdefault(key, []).append(value)
    return {arm: {key: {"best": max(v), "min": min(v), "n": len(v)} for key, v in keys.items()}
            for arm, keys in table.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--worker", default="", help=argparse.SUPPRESS)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--arms", default="torch,xla,xla_onednn,xla_ynn,xla_jax012,onednn")
    parser.add_argument("--jax-python", default="", help="python of a venv with jax 0.12")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    shapes = [s for s in args.shapes.split(",") if s]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        parser.error(f"unknown shapes {unknown}; valid: {list(SHAPES)}")
    if args.worker:
        print(json.dumps(worker(args.worker, shapes, args.repeats)))
        return
    from mtrl.evidence.bench_record import write_record
    from mtrl.evidence.stamp import load_average, machine_stamp
    stamp = machine_stamp()
    arms = [a for a in args.arms.split(",") if a]
    rounds = []
    for r in range(args.rounds):
        record = {"load_before": load_average(), "arms": {}}
        for arm in (arms if r % 2 == 0 else arms[::-1]):
            record["arms"][arm] = run_arm(arm, args, shapes)
            errors = record["arms"][arm].get("error")
            print(f"round {r} {arm}: " + (f"error: {errors}" if errors else "ok"), flush=True)
        record["load_after"] = load_average()
        rounds.append(record)
    result = {"bandwidth_gb_s": bandwidth_gb_s(args.repeats), "rounds": rounds,
              "best": summarize(rounds), "cpu_flags": cpu_flags(), "nproc": os.cpu_count(),
              "command": " ".join(sys.argv)}
    for arm, keys in result["best"].items():
        print(arm, {k: round(v["best"]) for k, v in keys.items()
                    if k.startswith(("square", "update_gate", "decode8_gate", "update_logits"))})
    print(f"bandwidth {result['bandwidth_gb_s']:.1f} GB/s")
    write_record(args.out, result, stamp)


def cpu_flags() -> list[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return sorted(x for x in line.split(":", 1)[1].split()
                                  if x.startswith(("amx", "avx512_bf16", "avx512f")))
    except OSError:
        pass
    return []


if __name__ == "__main__":
    main()
