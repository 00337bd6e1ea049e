"""Resume from the windows between checkpoints that the SIGKILL tests do not reach:
after the warm start's step-0 checkpoint and before the first RL one (the default
run's RL steps 1-9). The workdir such a stop leaves is made deterministically with
train.steps=0 (a warm start only): the same files a kill in that window leaves."""

from tests.training.kill_resume import RL_RESUME_CONFIG, train
from tests.training.loop.test_resume import records


def test_a_run_stopped_after_its_warm_start_resumes_with_the_same_command(tmp_path,
                                                                         uninterrupted):
    # The uninterrupted run is the session's (shared with test_resume.py).
    config, whole = uninterrupted(RL_RESUME_CONFIG)
    stopped = tmp_path / "stopped"
    train(config, stopped, "--config.train.steps=0")  # only the step-0 checkpoint
    assert sorted(p.name for p in (stopped / "checkpoints").iterdir()
                  if p.name.isdigit()) == ["0"]

    printed = train(config, stopped)
    assert "resuming from RL step 0" in printed
    assert records(stopped) == records(whole)
    # The summary says what the run did, the whole run's time included.
    assert "Test success: " in printed and "(this invocation " in printed
    events = {p.parent.name for p in (stopped / "tensorboard").rglob("events.out.tfevents.*")}
    assert events == {"tensorboard", "sft"}  # RL and test metrics; SFT losses
