"""Exact resume: a run SIGKILLed in the middle and restarted from its latest checkpoint
logs the same metrics from then on as an uninterrupted run (CPU, same seed)."""

import json

from tests.training.kill_resume import (RL_RESUME_CONFIG, checkpoint_steps, train,
                                        whole_and_killed_runs)

TIMING = ("time", "seconds", "compiles")  # and names ending in _s: wall-clock values


def records(workdir):
    lines = (workdir / "metrics.jsonl").read_text().splitlines()
    return {r["step"]: {k: v for k, v in r.items()
                        if not (k.endswith("_s") or any(t in k for t in TIMING))}
            for r in map(json.loads, lines)}


def committed_steps(workdir):
    return checkpoint_steps(workdir / "checkpoints")


def test_sigkill_and_resume_reproduces_the_uninterrupted_run(tmp_path, uninterrupted):
    # Killed as it is about to save RL step 3: step 2 is committed, 3-5 are not. The
    # uninterrupted run is the session's (shared with test_resume_windows.py).
    config, whole, killed = whole_and_killed_runs(tmp_path, uninterrupted, RL_RESUME_CONFIG,
                                                  "checkpoints", 3)
    before = committed_steps(killed)
    assert before and max(before) == 2, before  # killed mid-run

    train(config, killed)
    expected, got = records(whole), records(killed)
    assert sorted(got) == sorted(expected) == [0, 1, 2, 3, 4, 5]
    for step in sorted(expected):
        assert got[step] == expected[step], f"step {step} differs after resume"
    assert any("heldout_success" in r for r in got.values())
