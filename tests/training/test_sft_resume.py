"""Exact SFT resume: a run SIGKILLed in the middle of its SFT warm start and started
again continues SFT from its last SFT checkpoint: the SFT log has no duplicate lines
and equals an uninterrupted run's, and the post-SFT evaluation is the same."""

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
    c.train.steps = 1
    c.train.tasks_per_step = 2
    c.train.eval_interval = 1
    c.sft.steps = 300
    c.sft.first_phase_steps = 100
    c.sft.batch_size = 4
    c.sft.checkpoint_every = 10
    return c
'''


def command(config, workdir):
    return [sys.executable, "-m", "mtrl.train", f"--config={config}", f"--workdir={workdir}",
            "--noprogress"]


def sft_steps(workdir):
    directory = workdir / "sft_checkpoints"
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit()) \
        if directory.exists() else []


def sft_log(workdir):
    return [json.loads(line) for line in (workdir / "sft.jsonl").read_text().splitlines()]


def post_sft_metrics(workdir):
    for line in (workdir / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["step"] == 0:
            return {k: v for k, v in record.items() if not k.endswith("_s") and "time" not in k}
    raise AssertionError("no step-0 evaluation")


def test_sigkill_during_sft_resumes_sft_exactly(tmp_path):
    config = tmp_path / "small.py"
    config.write_text(CONFIG)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    subprocess.run(command(config, whole), check=True, env=env, cwd=ROOT, timeout=900,
                   capture_output=True)

    victim = subprocess.Popen(command(config, killed), env=env, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 900
    # Agent 0 trains SFT updates 1-300, agent 1 301-600: kill inside agent 0's second phase.
    while time.time() < deadline and not [s for s in sft_steps(killed) if s >= 150]:
        assert victim.poll() is None, "the run ended before it could be killed"
        time.sleep(0.02)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    reached = max(sft_steps(killed))
    assert reached < 600, reached  # killed during SFT
    assert not (killed / "checkpoints").exists() or not any(
        p.name.isdigit() for p in (killed / "checkpoints").iterdir())

    subprocess.run(command(config, killed), check=True, env=env, cwd=ROOT, timeout=900,
                   capture_output=True)
    got, expected = sft_log(killed), sft_log(whole)
    keys = [(r["tag"], r["step"]) for r in got]
    assert len(keys) == len(set(keys)), "duplicate SFT log lines after resume"
    assert got == expected
    assert post_sft_metrics(killed) == post_sft_metrics(whole)
