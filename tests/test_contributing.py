"""CONTRIBUTING.md's study and benchmark guides, followed literally (the estimator, loss,
environment and suite guides: tests/training/test_contributor_path.py): the guide's
study.json, in a study folder beside the record it names, becomes a row of the results
index with the paired interval it asks for; the guide's benchmark module, written as a
module of a package and run with `python -m`, passes the harness's checks and writes
one stamped record."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

from mtrl.evidence.bench_record import FORMAT, read_record
from mtrl.evidence.results_index import render
from tests.training.test_contributor_path import GUIDE, guide_blocks

ROOT = pathlib.Path(__file__).resolve().parents[1]


def only_block(prefix: str) -> tuple[str, str]:
    blocks = guide_blocks(GUIDE.read_text(), prefix)
    assert len(blocks) == 1, blocks
    path, _, body = blocks[0]
    return path, body


def test_the_study_guide_makes_a_row_of_the_results_index(tmp_path):
    path, body = only_block("experiments/")
    study = json.loads(body)
    folder = tmp_path / pathlib.PurePosixPath(path).parent
    folder.mkdir(parents=True)
    (folder / "study.json").write_text(body)
    (folder / "README.md").write_text("**Question.** ...\n")
    record = {"commit": "abc1234def", "my_method": [{"test_success": s} for s in (.5, .6, .7)],
              "grpo": [{"test_success": s} for s in (.4, .6, .5)]}
    (folder / study["record"]).write_text(json.dumps(record))
    (tmp_path / "experiments" / "claims").mkdir()
    rows = [line for line in render(tmp_path).splitlines() if "[my_study]" in line]
    assert len(rows) == 1
    assert study["question"] in rows[0] and study["verdict"] in rows[0]
    assert "+0.10 [" in rows[0] and "(3 seeds)" in rows[0] and "abc1234" in rows[0]


def test_the_benchmark_guide_runs_under_the_harness_and_writes_a_stamped_record(tmp_path):
    path, body = only_block("bench/")
    name = pathlib.PurePosixPath(path).stem
    # the harness's rules (tests/bench/test_harness.py) hold for the guide's module
    assert "sys.path" not in body and "getloadavg" not in body
    assert "machine_stamp()" in body and re.search(r"\bwrite_record\(", body)
    package = tmp_path / "guide_bench"  # stands in for bench/
    package.mkdir()
    (package / "__init__.py").touch()
    (package / f"{name}.py").write_text(body)
    out = tmp_path / "record.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-m", f"guide_bench.{name}", "--out", str(out),
                           "--size", "2000"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results, stamp = read_record(out)
    assert stamp["format"] == FORMAT and {"commit", "load_before", "load_after"} <= set(stamp)
    assert results["command"].startswith(f"python -m bench.{name}")
    assert set(results["seconds"]) == {"sorted", "heapq"} and results["ratio"] > 0
