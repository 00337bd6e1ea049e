"""One trainer run per seed, each in a process and workdir of its own, as the scripts
that run an experiment on several seeds do (tools/run_default.py,
tools/run_textworld.py): their shared command line, the trainer call, and the time
split of an RL step read back from a run's metrics log. What a script reports from a
run is its own; the statistics over seeds are mtrl.evidence.seed_stats."""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any, Mapping, NamedTuple, Sequence

# A seed's result name -> the per-step seconds the trainer logs under (metrics.jsonl).
STEP_TIME_SPLIT = {"step_rollout_s": "time/rollout_s", "step_env_s": "time/env_s",
                   "step_update_s": "time/update_s"}


def parse_seed_run_args(description: str, workdir_root: str,
                        argv: Sequence[str] | None = None,
                        adopt: bool = False) -> argparse.Namespace:
    """--seeds (comma-separated, default "0"), --out (required), --workdir-root
    (default `workdir_root`) and --override (repeatable extra trainer flags), and with
    `adopt` --adopt (repeatable SEED=DIR: a finished run to take instead of running
    that seed) and --stopped (SEED=DIR: a run its warm-start check stopped), parsed from `argv` (None: sys.argv)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seeds", default="0", help="comma-separated seeds, run in order")
    parser.add_argument("--out", required=True, help="JSON output file")
    parser.add_argument("--workdir-root", default=workdir_root,
                        help="each seed writes to <root>/seed<S> (emptied first)")
    parser.add_argument("--override", action="append", default=[],
                        help="extra trainer flag, e.g. --override=--config.train.steps=10")
    if adopt:
        parser.add_argument("--adopt", action="append", default=[],
                            help="SEED=DIR: that seed's finished run, checked, not re-run")
        parser.add_argument("--stopped", action="append", default=[],
                            help="SEED=DIR: that seed's run, stopped before RL by its "
                                 "warm-start check (counted with gain 0)")
    return parser.parse_args(argv)


class SeedRun(NamedTuple):
    summary: dict[str, Any]  # the trainer's --out JSON
    workdir: pathlib.Path  # <root>/seed<S>: metrics.jsonl, checkpoints
    wall_minutes: float  # from the process start to the summary read: startup included


def run_trainer(seed: int, root: pathlib.Path, flags: Sequence[str], *, cwd: pathlib.Path,
                config: str | None = None) -> SeedRun:
    """`python -m mtrl.train` for one seed, in a process of its own (no compiled
    function or state shared with another seed) and in <root>/seed<S>, emptied first.

    The command is [--config=`config`] --workdir --out --config.seed=<S> `flags`
    (config None: the embedded default; flags come last, so an override there wins),
    printed before it runs from `cwd`, the checkout whose mtrl the script runs.
    A failed run raises subprocess.CalledProcessError.
    """
    workdir = root / f"seed{seed}"
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    summary_file = workdir / "summary.json"
    command = [sys.executable, "-m", "mtrl.train",
               *([f"--config={config}"] if config is not None else []),
               f"--workdir={workdir}", f"--out={summary_file}", f"--config.seed={seed}", *flags]
    print(f"[seed {seed}] {' '.join(command)}", flush=True)
    started = time.perf_counter()
    subprocess.run(command, check=True, cwd=cwd)
    summary = json.loads(summary_file.read_text())
    return SeedRun(summary, workdir, (time.perf_counter() - started) / 60)


def step_time_split(records: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Median seconds per RL step spent in rollout (sampler), environment and update.

    For each part p (STEP_TIME_SPLIT), over the metrics records r_t that log it (not
    None): median_t r_t[p]; None where no record does. Returns {step_rollout_s,
    step_env_s, step_update_s}.
    """
    out = {}
    for name, key in STEP_TIME_SPLIT.items():
        values = [r[key] for r in records if r.get(key) is not None]
        out[name] = statistics.median(values) if values else None
    return out


def write_seed_summary(path: str | pathlib.Path, summary: Mapping[str, Any],
                       runs: Sequence[Mapping[str, Any]]) -> None:
    """`summary` as indented JSON at `path`; with a single run, that run's keys are
    repeated at the top level (after the summary's own, which win on a shared name),
    so the file reads the same as the trainer's own --out."""
    out = dict(summary)
    if len(runs) == 1:
        out.update({k: v for k, v in runs[0].items() if k not in summary})
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(path).write_text(json.dumps(out, indent=2))


# Per-step numbers a record keeps of each run (small: a few per step), beside the digest
# of the whole metrics.jsonl it came from.
CURVE_KEYS = ("heldout_success", "reward_mean", "train_success_turn1", "skipped_update",
              "rollout/generated_samples")


def run_curve(workdir: str | pathlib.Path) -> dict[str, Any]:
    """{"metrics_sha256", "curve"}: the SHA-256 of the run's metrics.jsonl and, per
    logged step, its CURVE_KEYS present (so a number quoted from a record can be found
    in the record, and the file it came from checked)."""
    path = pathlib.Path(workdir) / "metrics.jsonl"
    if not path.exists():
        return {"metrics_sha256": None, "curve": []}
    data = path.read_bytes()
    curve = []
    for line in filter(None, data.decode().splitlines()):
        record = json.loads(line)
        point = {k: record[k] for k in CURVE_KEYS if record.get(k) is not None}
        if "step" in record and point:
            curve.append({"step": record["step"], **point})
    return {"metrics_sha256": hashlib.sha256(data).hexdigest(), "curve": curve}
