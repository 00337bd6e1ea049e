"""bench/rollout.py --smoke runs every arm (tree, naive, cross, termination) on two
tasks and writes its summary, so a change that breaks the benchmark shows in CI. No timing
is asserted (DESIGN.md section 8); the counts it reports are checked."""

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_smoke_run_writes_the_summary(tmp_path):
    out = tmp_path / "rollout.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
    result = subprocess.run([sys.executable, "-m", "bench.rollout", "--smoke", "--out",
                             str(out)], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(out.read_text())
    runs = summary["runs"]
    assert set(runs) == {"tree_align", "naive_align", "tree_cross", "tree_no_stop",
                         "tree_half_stop"}
    assert runs["tree_align"]["nodes"] == [2, 8] and runs["tree_cross"]["nodes"] == [2, 32]
    assert runs["tree_half_stop"]["nodes"] == [2, 4]  # task 0 of 2 terminates
    assert runs["tree_align"]["tokens"] == runs["naive_align"]["tokens"] > 0
    for run in runs.values():
        assert run["device_s"] > 0 and run["cpu_s"] > 0
    assert summary["speedup"] > 0 and summary["cpu_speedup"] > 0
