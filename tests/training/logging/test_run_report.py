"""A run says what it did: skipped updates say so instead of a reward, and the
summary carries the test success, the export and the whole run's time."""

import io

from mtrl.training.logging import MetricsLogger, Progress, read_metrics, summary


def test_a_skipped_update_says_so_instead_of_a_stale_or_zero_reward():
    out = io.StringIO()
    progress = Progress(3, stream=out, line_interval_s=0.0)
    progress.update(1, reward=0.5)
    progress.update(2, reward=None, note="update skipped: no informative group")
    progress.update(3, reward=0.25)
    first, skipped, last = out.getvalue().splitlines()
    assert "reward 0.500" in first
    assert "update skipped: no informative group" in skipped and "reward" not in skipped
    assert "reward 0.250" in last and "skipped" not in last


def test_the_summary_has_test_success_export_and_whole_run_time():
    text = summary(total_steps=20, best_step=10, best_success=0.5,
                   best_checkpoint="/run/checkpoints/10", wall_s=600, total_wall_s=3600,
                   test_success=0.375, test_tasks=8, exported="/run/export")
    lines = text.splitlines()
    assert lines[0] == "Run finished: 20 steps in 1h00m00s (this invocation 10m00s)."
    assert "Test success: 0.3750 on 8 test tasks (the step-10 checkpoint)." in lines
    assert "Exported (Hugging Face): /run/export" in lines


def test_sft_loss_and_test_metrics_reach_tensorboard_not_the_step_log(tmp_path):
    from tests.training.logging.test_logging import _read_events, _scalars
    with MetricsLogger(tmp_path) as logger:
        logger.write_sft("sft/agent0", 25, {"loss": 1.5})
        logger.write(3, {"heldout_success": 0.25})
        logger.write_reported(3, {"test_success": 0.5})
    assert read_metrics(tmp_path) == [{"step": 3, "heldout_success": 0.25}]
    (main,) = (tmp_path / "tensorboard").glob("events.out.tfevents.*")
    assert _scalars(_read_events(main))[("test_success", 3)] == 0.5
    (sft,) = (tmp_path / "tensorboard" / "sft").glob("events.out.tfevents.*")
    assert _scalars(_read_events(sft))[("sft/agent0/loss", 25)] == 1.5
