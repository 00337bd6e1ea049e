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


def test_the_summary_has_post_sft_and_final_test_ood_test_and_update_counts():
    text = summary(total_steps=3, best_step=2, best_success=0.5, best_checkpoint="/c/2",
                   test_success=0.75, test_tasks=4, post_sft_test_success=0.25,
                   extra_tests={"ood_test": (0.0, 0.125)}, updates=(2, 1, 1))
    lines = text.splitlines()
    assert ("Test success: 0.7500 on 4 test tasks (the step-2 checkpoint); after SFT "
            "0.2500.") in lines
    assert "ood_test success: 0.1250 (the step-2 checkpoint); after SFT 0.0000." in lines
    assert lines[-1].startswith("RL updates: 2 ran, 1 skipped (no informative group, or "
                                "no trainable token); 1 of them on zero advantages only")


def test_update_counts_read_the_last_line_of_each_step():
    from mtrl.training.checkpoints.run_record import update_counts
    records = [{"step": 0, "heldout_success": 0.0},
               {"step": 1, "skipped_update": 1.0},  # cut back on resume, then run again
               {"step": 1, "informative_rows": 4.0},
               {"step": 2, "skipped_update": 1.0},
               {"step": 3, "informative_rows": 0.0}]
    assert update_counts(records) == (2, 1, 1)


def test_a_rerun_of_a_finished_run_adds_to_its_recorded_total(tmp_path):
    from mtrl.training.checkpoints.run_record import read_run_seconds, write_run_seconds
    assert read_run_seconds(tmp_path, 5) == 0.0
    write_run_seconds(tmp_path, 5, 321.5)
    assert read_run_seconds(tmp_path, 5) == 321.5
    assert read_run_seconds(tmp_path, 4) == 0.0  # another step: the checkpoint's time stands
    (tmp_path / "run_seconds.json").write_text("{torn")
    assert read_run_seconds(tmp_path, 5) == 0.0
