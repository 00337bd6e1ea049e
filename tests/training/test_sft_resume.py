"""Exact SFT resume: a run SIGKILLed in the middle of its SFT warm start and started
again continues SFT from its last SFT checkpoint: the SFT log has no duplicate lines
and equals an uninterrupted run's, and the post-SFT evaluation is the same."""

import json

from tests.training.kill_resume import (TINY_CONFIG_HEAD, checkpoint_steps, train,
                                        whole_and_killed_runs)

CONFIG = TINY_CONFIG_HEAD + '''    c.train.steps = 1
    c.train.tasks_per_step = 2
    c.train.eval_interval = 1
    c.sft.steps = 300
    c.sft.first_phase_steps = 100
    c.sft.batch_size = 4
    c.sft.checkpoint_every = 10
    return c
'''


def sft_steps(workdir):
    return checkpoint_steps(workdir / "sft_checkpoints")


def sft_log(workdir):
    return [json.loads(line) for line in (workdir / "sft.jsonl").read_text().splitlines()]


def post_sft_metrics(workdir):
    for line in (workdir / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["step"] == 0:
            return {k: v for k, v in record.items() if not k.endswith("_s") and "time" not in k}
    raise AssertionError("no step-0 evaluation")


def test_sigkill_during_sft_resumes_sft_exactly(tmp_path):
    # Agent 0 trains SFT updates 1-300, agent 1 301-600: kill inside agent 0's second phase.
    config, whole, killed = whole_and_killed_runs(
        tmp_path, CONFIG, lambda workdir: any(s >= 150 for s in sft_steps(workdir)),
        poll_s=0.02)
    reached = max(sft_steps(killed))
    assert reached < 600, reached  # killed during SFT
    assert not (killed / "checkpoints").exists() or not any(
        p.name.isdigit() for p in (killed / "checkpoints").iterdir())

    train(config, killed)
    got, expected = sft_log(killed), sft_log(whole)
    keys = [(r["tag"], r["step"]) for r in got]
    assert len(keys) == len(set(keys)), "duplicate SFT log lines after resume"
    assert got == expected
    assert post_sft_metrics(killed) == post_sft_metrics(whole)
