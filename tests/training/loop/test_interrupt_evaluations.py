"""Stops inside evaluations, with real signals on a real trainer process: Ctrl-C during
the warm start's (step 0) validation stops at the next safe point in one line; the same
command, SIGKILLed as the final test starts, leaves every RL checkpoint and no test;
the same command again finishes with the uninterrupted run's metrics and test."""

import json
import signal

from tests.training.kill_resume import RL_RESUME_CONFIG, stopped_at, train
from tests.training.loop.test_resume import committed_steps, records


def test_stops_inside_the_first_evaluation_and_the_final_test_resume(tmp_path,
                                                                     uninterrupted):
    # The uninterrupted run is the session's (shared with test_resume.py).
    config, whole = uninterrupted(RL_RESUME_CONFIG)
    stopped = tmp_path / "stopped"

    code, printed = stopped_at(config, stopped, "INT", "evaluation", 0)
    assert code == 128 + signal.SIGINT, printed[-3000:]
    last = printed.strip().splitlines()[-1]
    assert last == "interrupted at RL step 0; run the same command to resume", printed[-3000:]
    assert "Traceback" not in printed
    assert committed_steps(stopped) == [0]

    code, printed = stopped_at(config, stopped, "KILL", "final-test", 0)
    assert code == -signal.SIGKILL, printed[-3000:]
    assert "resuming from RL step 0" in printed, printed[-3000:]
    assert committed_steps(stopped) == committed_steps(whole)
    assert not (stopped / "test.json").exists()

    printed = train(config, stopped)
    assert "resuming from RL step 5" in printed, printed[-3000:]
    assert records(stopped) == records(whole)
    test, expected = (json.loads((w / "test.json").read_text()) for w in (stopped, whole))
    assert test == expected and "test_success" in test
