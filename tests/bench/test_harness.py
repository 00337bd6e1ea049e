"""Every benchmark is on the shared harness: run as a module (no import-path edits),
timed by mtrl.evidence.timing, stamped by mtrl.evidence.stamp alone, written in the one
record format; a benchmark's worker starts as `python -m bench.<name>` from any folder;
the Tunix pair's modules import no more than the standard library at the top (their
worker runs in Tunix's venv)."""

import json
import pathlib
import re
import subprocess
import sys

import pytest

from bench import workers

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = sorted([*(ROOT / "bench").glob("*.py"), *(ROOT / "tools").glob("*.py")])
# Benchmarks whose --out is one JSON record (bench.memory prints lines; smollm2_shape and
# workers are helpers).
RECORDS = ("cpu_bf16", "decode", "decode_attention", "draw", "envs", "gpu", "layout_reuse",
           "lora", "peak_rss", "profile_decode", "profile_update", "rl_step", "rollout",
           "sampler", "sandbox", "scaling", "smoke_buckets", "smollm2_step", "train_step",
           "tunix", "tunix_agentic", "update_bf16")


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_program_edits_the_import_path_or_reads_the_load_itself(path):
    source = path.read_text()
    assert "sys.path" not in source
    assert "getloadavg" not in source  # the load is the stamp's (stamp.load_average)
    assert "scripts/" not in source
    assert not re.search(r"^\s*import (bench_|smollm2_shape|profile_)", source, re.M)


@pytest.mark.parametrize("name", RECORDS)
def test_every_benchmark_writes_the_one_record_format(name):
    source = (ROOT / "bench" / f"{name}.py").read_text()
    assert "machine_stamp()" in source
    assert re.search(r"\b(write_record|bench_record)\(", source)
    assert "json.dump(result" not in source and "json.dump(summary" not in source


def test_the_tunix_pair_imports_only_the_standard_library_at_the_top():
    code = ("import sys, bench.tunix_agentic\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('jax', 'numpy', 'flax', 'torch') or m.startswith('mtrl.training'))\n"
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_worker_runs_as_a_module_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the checkout: the child finds bench/ on PYTHONPATH
    assert workers.module_command("bench.x", ["--a", 1], "py") == ["py", "-m", "bench.x",
                                                                  "--a", "1"]
    assert workers.child_env({"PYTHONPATH": "/elsewhere"})["PYTHONPATH"] == \
        f"{workers.ROOT}:/elsewhere"
    proc = workers.run_module("bench.cpu_bf16", ["--worker", "torch", "--shapes",
                                                 "decode1_qo", "--repeats", "1", "--out", "-"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(result["gflops"]) == {"decode1_qo/f32", "decode1_qo/bf16"}
    assert all(v > 0 for v in result["gflops"].values())


def test_the_side_by_side_flags_need_out_outside_the_worker():
    parser = workers.side_by_side_parser("Title.\n\nBody.")
    assert workers.parse_sides(parser, ["--worker"]).worker
    args = workers.parse_sides(parser, ["--out", "x.json", "--layers", "4"])
    assert (args.out, args.layers, args.repeats, args.worker) == ("x.json", 4, 3, False)
    with pytest.raises(SystemExit):
        workers.parse_sides(parser, [])
