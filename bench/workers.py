"""A benchmark's own worker mode in another process: another Python (Tunix's or jax
0.12's virtual environment), other XLA flags or OpenMP threads. One definition for the
benchmarks that start themselves (cpu_bf16, sampler, tunix, tunix_agentic).

    command = module_command("bench.cpu_bf16", ["--worker", "torch"], python)
    proc = run_module("bench.cpu_bf16", argv, python, env)   # output captured
    client = WorkerClient(python, "bench.tunix", argv)      # JSON request -> RESULT line
    restart("bench.sampler", OMP_NUM_THREADS="1")            # this run again, env changed
    parser = side_by_side_parser(__doc__)                     # the Tunix pair's flags

A worker runs as `python -m bench.<name>` with this checkout's root first on PYTHONPATH,
so any Python finds this checkout's bench/ and mtrl/ from any working directory (paths
in the arguments keep their meaning). Standard library only: Tunix's worker imports it.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
from typing import Mapping, Sequence

ROOT = pathlib.Path(__file__).resolve().parents[1]


def child_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) with the checkout's root first on PYTHONPATH."""
    env = dict(os.environ if env is None else env)
    rest = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + rest if rest else "")
    return env


def module_command(module: str, argv: Sequence[str], python: str | None = None) -> list[str]:
    """`python -m module argv...` (python: this interpreter by default)."""
    return [python or sys.executable, "-m", module, *map(str, argv)]


def run_module(module: str, argv: Sequence[str], python: str | None = None,
               env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    """Runs the module to completion; its stdout and stderr come back as text."""
    return subprocess.run(module_command(module, argv, python), env=child_env(env),
                          capture_output=True, text=True)


def restart(module: str, **env_changes: str) -> None:
    """Replaces this process by `python -m module` with this run's arguments and
    `env_changes` set (for settings a library reads once, when it loads)."""
    os.environ.update(env_changes)
    command = module_command(module, sys.argv[1:])
    os.execve(command[0], command, child_env())


class WorkerClient:
    """A worker as a subprocess that keeps its state: one JSON request a line on its
    stdin, one `RESULT {...}` line on its stdout per request."""

    def __init__(self, python: str, module: str, argv: Sequence[str]):
        """Runs `python -m module argv...` (the module's --worker mode)."""
        self.proc = subprocess.Popen(module_command(module, argv, python), env=child_env(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.info = self._read()

    def _read(self) -> dict:
        for line in self.proc.stdout:
            if line.startswith("RESULT "):
                return json.loads(line[len("RESULT "):])
        raise RuntimeError(f"worker exited with {self.proc.wait()}")

    def call(self, **request) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def reply(obj) -> None:
    """A worker's answer: one `RESULT {...}` line (what WorkerClient reads)."""
    print("RESULT " + json.dumps(obj), flush=True)


def side_by_side_parser(doc: str) -> argparse.ArgumentParser:
    """The flags of the benchmarks that run mtrl beside Tunix's worker (bench.tunix,
    bench.tunix_agentic); each adds its own shape flags. --out is checked by
    `parse_sides`, since the worker mode writes none."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--worker", action="store_true", help="Tunix side (its venv)")
    parser.add_argument("--tunix-python", default="/work/venv-tunix/bin/python")
    parser.add_argument("--layers", type=int, default=0, help="0 = SmolLM2's 30")
    parser.add_argument("--repeats", type=int, default=3)
    return parser


def parse_sides(parser: argparse.ArgumentParser, argv=None) -> argparse.Namespace:
    """Parses; outside the worker mode --out is required."""
    args = parser.parse_args(argv)
    if not args.worker and not args.out:
        parser.error("--out is required")
    return args
