"""Exact resume: a run SIGKILLed in the middle and restarted from its latest checkpoint
logs the same metrics from then on as an uninterrupted run (CPU, same seed)."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIG = '''
from mtrl.training.config import base_config

def get_config():
    c = base_config()
    c.model.overrides = dict(num_layers=1, hidden_size=32, intermediate_size=64, num_heads=2,
                             num_kv_heads=1, head_dim=16)
    c.data.num_train = 32
    c.data.num_eval = 2
    c.env.workers = 1
    c.rollout.num_generations = 2
    c.rollout.max_new_tokens = 12
    c.rollout.max_context = 256
    c.train.steps = 5
    c.train.tasks_per_step = 2
    c.train.eval_interval = 2
    c.train.save_interval = 1
    c.sft.steps = 4
    c.sft.batch_size = 4
    return c
'''
TIMING = ("time", "seconds", "compiles")  # and names ending in _s: wall-clock values


def command(config, workdir):
    return [sys.executable, "-m", "mtrl.train", f"--config={config}", f"--workdir={workdir}",
            "--noprogress"]


def records(workdir):
    lines = (workdir / "metrics.jsonl").read_text().splitlines()
    return {r["step"]: {k: v for k, v in r.items()
                        if not (k.endswith("_s") or any(t in k for t in TIMING))}
            for r in map(json.loads, lines)}


def committed_steps(workdir):
    directory = workdir / "checkpoints"
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit()) \
        if directory.exists() else []


def test_sigkill_and_resume_reproduces_the_uninterrupted_run(tmp_path):
    config = tmp_path / "small.py"
    config.write_text(CONFIG)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    subprocess.run(command(config, whole), check=True, env=env, cwd=ROOT, timeout=900,
                   capture_output=True)

    victim = subprocess.Popen(command(config, killed), env=env, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 900
    while time.time() < deadline and not [s for s in committed_steps(killed) if s >= 2]:
        assert victim.poll() is None, "the run ended before it could be killed"
        time.sleep(0.2)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    before = committed_steps(killed)
    assert before and max(before) < 5, before  # killed mid-run

    subprocess.run(command(config, killed), check=True, env=env, cwd=ROOT, timeout=900,
                   capture_output=True)
    expected, got = records(whole), records(killed)
    assert sorted(got) == sorted(expected) == [0, 1, 2, 3, 4, 5]
    for step in sorted(expected):
        assert got[step] == expected[step], f"step {step} differs after resume"
    assert any("heldout_success" in r for r in got.values())
