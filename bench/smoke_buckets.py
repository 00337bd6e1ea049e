"""`--smoke`'s sampler row floor (config/smoke.py SAMPLER_BUCKETS min_batch), compared
side by side on the README's training commands, one JSON.

    python -m bench.smoke_buckets --min-batch 8,2 --suite --out /tmp/smoke.json
    python -m bench.smoke_buckets --min-batch 8,2 --commands 1 --out /tmp/first.json

Each arm runs the README's `python -m mtrl.train` commands (tests/test_readme_commands.py
finds them; the first --commands of them, those whose inputs are on disk) with
`--smoke`, one after another, each in a fresh process whose SAMPLER_BUCKETS floor is the
arm's. Arms alternate within each repeat, so load drifts hit both alike.

  --suite  the test suite's conditions (tests/conftest.py): XLA level 0 with the
           elemental fusion emitters, and one fresh persistent compilation cache per
           arm and repeat that the commands share;
  default  a researcher's: XLA's defaults and no persistent cache.

Reported per arm and repeat: each command's wall seconds and the CPU (user + system)
of its process, and the sums. Nothing else changes between arms; padding rows are
masked out, so the runs sample the same tokens up to float rounding.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import resource
import shlex
import subprocess
import sys
import tempfile
import time

from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import machine_stamp

ROOT = pathlib.Path(__file__).resolve().parents[1]

SUITE_XLA_FLAGS = "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"
# Runs mtrl.train with the arm's row floor; argv[1] is the floor, the rest mtrl.train's.
LAUNCHER = ("import sys; import mtrl.training.config.smoke as smoke; "
            "smoke.SAMPLER_BUCKETS['min_batch'] = int(sys.argv.pop(1)); "
            "sys.argv[0] = 'mtrl.train'; from mtrl.train import run; run()")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-batch", default="8,2", help="comma list of row floors (arms)")
    parser.add_argument("--commands", type=int, default=7, help="the first N README commands")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--suite", action="store_true", help="the test suite's XLA flags "
                        "and a shared persistent compilation cache (module docstring)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    args.min_batch = [int(v) for v in args.min_batch.split(",")]
    if not args.min_batch or min(args.min_batch) < 1:
        parser.error("--min-batch needs row floors >= 1")
    return args


def readme_commands(limit: int) -> list[list[str]]:
    """mtrl.train's arguments of the README commands that can run here."""
    from tests.test_readme_commands import missing_inputs, readme_commands as found
    out = []
    for command in found()[:limit]:
        args = shlex.split(command)[3:]
        if missing_inputs(args) is None:
            out.append(args)
    return out


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_arm(min_batch: int, commands: list[list[str]], suite: bool) -> dict:
    """Every command once with this row floor; wall and CPU per command."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT))
    for name in ("XLA_FLAGS", "JAX_COMPILATION_CACHE_DIR",
                 "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
                 "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"):
        env.pop(name, None)  # the arm sets its own (--suite) or none (XLA's defaults)
    with tempfile.TemporaryDirectory(prefix="mtrl-smoke-bench-") as scratch:
        if suite:
            env.update(XLA_FLAGS=SUITE_XLA_FLAGS,
                       JAX_COMPILATION_CACHE_DIR=os.path.join(scratch, "cache"),
                       JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                       JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="-1")
        runs = []
        for i, args in enumerate(commands):
            workdir = os.path.join(scratch, f"run{i}")
            started, cpu = time.perf_counter(), children_cpu()
            done = subprocess.run([sys.executable, "-c", LAUNCHER, str(min_batch), *args,
                                   "--smoke", f"--workdir={workdir}", "--noprogress"],
                                  cwd=ROOT, env=env, capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"{args}: exit {done.returncode}\n{done.stderr[-2000:]}")
            runs.append({"command": " ".join(["python -m mtrl.train", *args]),
                         "wall_s": time.perf_counter() - started,
                         "cpu_s": children_cpu() - cpu})
    return {"min_batch": min_batch, "runs": runs,
            "wall_s": sum(r["wall_s"] for r in runs), "cpu_s": sum(r["cpu_s"] for r in runs)}


def main(argv=None) -> dict:
    args = parse_args(argv)
    commands = readme_commands(args.commands)
    stamp = machine_stamp()
    record = {"command": " ".join(["python", "-m", "bench.smoke_buckets",
                                   *(argv if argv is not None else sys.argv[1:])]),
              "suite_conditions": args.suite, "commands": len(commands), "repeats": []}
    for repeat in range(args.repeats):
        arms = [run_arm(m, commands, args.suite) for m in args.min_batch]
        record["repeats"].append(arms)
        for arm in arms:
            print(f"repeat {repeat} min_batch {arm['min_batch']}: {arm['wall_s']:.1f} s wall, "
                  f"{arm['cpu_s']:.1f} s CPU", flush=True)
    record = write_record(args.out, record, stamp)
    print(f"wrote {args.out}")
    return record


if __name__ == "__main__":
    main()
