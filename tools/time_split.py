"""Where finished runs' wall time went (mtrl/training/logging/time_split.py), one JSON.

    python -m tools.time_split --out split.json WORKDIR [WORKDIR ...]

Per workdir: the split in minutes, from its metrics.jsonl, run_seconds.json and the
last checkpoint's loop state (extra/metadata: sft_minutes, run_seconds), with the
run's provenance (commit, config hash) when it wrote one; over the workdirs, the mean
of each part. A workdir without a finished run is refused in one line.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys

from mtrl.training.logging.metrics import read_metrics
from mtrl.training.logging.time_split import time_split


def last_loop_state(workdir: pathlib.Path) -> dict:
    """The loop state saved with the highest-numbered checkpoint."""
    steps = sorted(int(p.name) for p in (workdir / "checkpoints").glob("*") if p.name.isdigit())
    if not steps:
        raise SystemExit(f"error: {workdir}: no checkpoint (is it a run's workdir?)")
    return json.loads((workdir / "checkpoints" / str(steps[-1]) / "extra" / "metadata")
                      .read_text())


def split_of(workdir: pathlib.Path) -> dict:
    seconds = workdir / "run_seconds.json"
    if not seconds.exists():
        raise SystemExit(f"error: {workdir}: no run_seconds.json (the run has not finished)")
    loop = last_loop_state(workdir)
    split = time_split(read_metrics(workdir), float(loop["sft_minutes"]),
                       float(loop["run_seconds"]),
                       float(json.loads(seconds.read_text())["run_seconds"]))
    provenance = workdir / "provenance.json"
    if provenance.exists():
        record = json.loads(provenance.read_text())
        split["commit"] = record.get("commit")
        split["config_hash"] = record.get("config_hash")
    return {"workdir": str(workdir), **split}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdirs", nargs="+", type=pathlib.Path)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    runs = [split_of(w) for w in args.workdirs]
    parts = [k for k, v in runs[0].items() if isinstance(v, float)]
    mean = {k: statistics.fmean(r[k] for r in runs if r.get(k) is not None)
            for k in parts if any(r.get(k) is not None for r in runs)}
    out = {"command": "python -m tools.time_split " + " ".join(sys.argv[1:]),
           "runs": runs, "mean_minutes": mean}
    pathlib.Path(args.out).write_text(json.dumps(out, indent=2))
    for r in runs:
        print(f"{r['workdir']}: total {r['total']:.1f} min = SFT {r['sft']:.1f} + RL steps "
              f"{r['rl_steps']:.1f} + validation "
              f"{'-' if r['validation'] is None else format(r['validation'], '.1f')} + "
              f"after RL {r['after_rl']:.1f} + other {r['other']:.1f}")


if __name__ == "__main__":
    main()
