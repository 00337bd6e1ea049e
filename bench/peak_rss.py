"""Peak resident memory of a command and every process it starts (sandbox workers,
trainer subprocesses), polled from /proc; the numbers BENCHMARKS.md "Memory"
records for each experiment config.

    python -m bench.peak_rss --out /tmp/peak.json -- \
        python -m mtrl.train --config=experiments/configs/math.py --smoke

Every `--interval` seconds it sums VmRSS over the command's process tree (the command
and its descendants, found through /proc/<pid>/task/*/children) and keeps the largest
sum and the largest single process. A process that lives shorter than one interval can
be missed, so the tree's peak is a lower bound; the largest process's own high-water
mark (VmHWM, read at every poll) is exact up to its last poll. Writes one JSON object
(command, rc, wall_s, peak_tree_gb, peak_at_s: seconds from the start to that peak,
peak_process_gb, polls, and the machine stamp) to --out and to stdout.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import time

from mtrl.evidence.bench_record import bench_record
from mtrl.evidence.stamp import machine_stamp

GB = 1e9


def _status_kb(pid: int, field: str) -> int:
    """A `field:` line of /proc/<pid>/status in kB; 0 if the process is gone."""
    try:
        for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError, ValueError):
        pass
    return 0


def process_tree(root: int) -> list[int]:
    """`root` and its live descendants, breadth first."""
    tree, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        tree.append(pid)
        try:
            tasks = list(pathlib.Path(f"/proc/{pid}/task").iterdir())
        except (FileNotFoundError, PermissionError):
            continue
        for task in tasks:
            try:
                frontier += [int(c) for c in (task / "children").read_text().split()]
            except (FileNotFoundError, PermissionError, ValueError):
                pass
    return tree


def measure(command: list[str], interval: float = 0.2) -> dict:
    """Runs `command` to completion and returns its peaks (see the module docstring)."""
    if not command:
        raise ValueError("no command to measure: put it after --")
    if interval <= 0:
        raise ValueError(f"interval must be positive, got {interval}")
    start = time.perf_counter()
    process = subprocess.Popen(command)
    peak_tree = peak_process = polls = 0
    peak_at = 0.0
    while process.poll() is None:
        tree = process_tree(process.pid)
        rss = sum(_status_kb(p, "VmRSS") for p in tree)
        if rss > peak_tree:
            peak_tree, peak_at = rss, time.perf_counter() - start
        peak_process = max([peak_process] + [_status_kb(p, "VmHWM") for p in tree])
        polls += 1
        time.sleep(interval)
    return {"command": command, "rc": process.returncode,
            "wall_s": round(time.perf_counter() - start, 1),
            "peak_tree_gb": round(peak_tree * 1024 / GB, 3), "peak_at_s": round(peak_at, 1),
            "peak_process_gb": round(peak_process * 1024 / GB, 3), "polls": polls}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="", help="write the JSON result here too")
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between polls")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    stamp = machine_stamp()
    try:
        result = measure(command, args.interval)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    text = json.dumps(bench_record(result, stamp), indent=2)
    print(text)
    if args.out:
        pathlib.Path(args.out).write_text(text + "\n")
    return 0 if result["rc"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
