"""Resume from the windows between checkpoints that the SIGKILL tests do not reach:
after the warm start's step-0 checkpoint and before the first RL one (the default
run's RL steps 1-9). The workdir such a stop leaves is made deterministically with
train.steps=0 (a warm start only): the same files a kill in that window leaves."""

from tests.training.kill_resume import TINY_CONFIG_HEAD, train
from tests.training.loop.test_resume import records

CONFIG = TINY_CONFIG_HEAD + '''    c.train.steps = 2
    c.train.tasks_per_step = 2
    c.train.eval_interval = 10
    c.train.save_interval = 10
    c.sft.steps = 4
    c.sft.batch_size = 4
    c.data.test_split = "test"
    c.data.num_test = 2
    c.data.options = dict(test_terms=("neg2x",), test_offset_range=(0, 9))
    return c
'''


def test_a_run_stopped_after_its_warm_start_resumes_with_the_same_command(tmp_path):
    config = tmp_path / "small.py"
    config.write_text(CONFIG)
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    train(config, whole)
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
