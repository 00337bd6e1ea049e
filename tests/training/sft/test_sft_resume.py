"""Exact SFT resume: a run SIGKILLed in the middle of its SFT warm start and started
again continues SFT from its last SFT checkpoint: the SFT log has no duplicate lines
and equals an uninterrupted run's, and the post-SFT evaluation is the same."""

import json

from tests.training.kill_resume import (SFT_RESUME_CONFIG, checkpoint_steps, train,
                                        whole_and_killed_runs)


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


def test_sigkill_during_sft_resumes_sft_exactly(tmp_path, uninterrupted):
    # Agent 0 trains SFT updates 1-40 (phase 1: 1-10, logged and saved at 10; phase 2:
    # 11-40, saved at 30, logged at 35), agent 1 41-80. Killed as agent 0 is about to
    # save update 40: the last checkpoint is update 30, and the log line of update 35,
    # written after it, must not survive the resume as a duplicate. The uninterrupted
    # run is the session's (shared with test_interrupts.py).
    config, whole, killed = whole_and_killed_runs(tmp_path, uninterrupted, SFT_RESUME_CONFIG,
                                                  "sft_checkpoints", 40)
    assert sft_steps(killed)[-1] == 30  # killed during SFT
    assert [r["step"] for r in sft_log(killed)][-1] == 35
    assert not (killed / "checkpoints").exists() or not any(
        p.name.isdigit() for p in (killed / "checkpoints").iterdir())

    train(config, killed)
    got, expected = sft_log(killed), sft_log(whole)
    keys = [(r["tag"], r["step"]) for r in got]
    assert len(keys) == len(set(keys)), "duplicate SFT log lines after resume"
    assert got == expected
    assert post_sft_metrics(killed) == post_sft_metrics(whole)
