"""The feedback gain reaches the run's summary: per split and checkpoint, beside
turn-1 success and Succ@T, in the `--out` record and the printed lines."""

from mtrl.training.checkpoints.run_record import run_record, summary_of


class _Budget:
    minutes = 0.0

    def exceeded(self):
        return False


def _split(prefix, turn1, success, gain, tasks):
    out = {f"{prefix}_success": success, f"{prefix}_success_turn1": turn1,
           f"{prefix}_feedback_gain_tasks": tasks}
    if gain is not None:
        out[f"{prefix}_feedback_gain"] = gain
    return out


def test_the_summary_reports_feedback_use_per_split_and_checkpoint():
    best = _split("heldout", 0.0, 0.8, 0.75, 40.0)
    post_sft = {"post_sft_success": 0.1,
                **_split("post_sft_heldout", 0.0, 0.1, 0.05, 40.0),
                **_split("post_sft_test", 0.0, 0.125, 0.125, 8.0),
                **_split("post_sft_ood_test", 0.0, 0.0, None, 0.0)}
    test = {**_split("test", 0.0, 0.75, 0.75, 8.0), **_split("ood_test", 0.0, 0.0, 0.0, 8.0)}
    last = {**_split("test", 0.0, 0.625, 0.5, 8.0), **_split("ood_test", 0.0, 0.0, 0.0, 8.0)}
    result = run_record(steps=20, minutes=1.0, invocation_minutes=1.0, best_step=10,
                        best_metrics=best, post_sft=post_sft, test=test,
                        best_checkpoint="/c/10", learning_curve=None, exported=None,
                        budget=_Budget(), extra_tests=("ood_test",), last_test=last)
    assert (result["turn1_success"], result["final_best_success"], result["feedback_gain"],
            result["feedback_gain_tasks"]) == (0.0, 0.8, 0.75, 40.0)
    assert result["post_sft_feedback_gain"] == 0.05
    assert (result["test_turn1_success"], result["test_success"], result["test_feedback_gain"],
            result["test_feedback_gain_tasks"]) == (0.0, 0.75, 0.75, 8.0)
    assert result["post_sft_test_feedback_gain"] == 0.125
    assert result["last_test_feedback_gain"] == 0.5 and result["last_test_success"] == 0.625
    assert result["post_sft_ood_test_feedback_gain"] is None  # no failed turn: no gain
    assert result["post_sft_ood_test_feedback_gain_tasks"] == 0.0
    result["last_step"] = 20
    lines = summary_of(result, 8, ("ood_test",)).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Feedback use"))
    assert [line.split(":")[0].strip() for line in lines[start + 1:start + 9]] == [
        "validation, step 10", "validation, after SFT", "test, step 10", "test, after SFT",
        "test, last (step 20)", "ood_test, step 10", "ood_test, after SFT",
        "ood_test, last (step 20)"]
    assert lines[start + 3].split(":", 1)[1].split() == ["0.0000,", "0.7500,", "gain",
                                                        "+0.7500", "(n=8)"]
    assert lines[start + 7].endswith("0.0000, 0.0000, gain n/a (n=0)")


def test_a_run_without_the_measure_prints_no_feedback_lines():
    result = run_record(steps=1, minutes=1.0, invocation_minutes=1.0, best_step=None,
                        best_metrics={}, post_sft={}, test={}, best_checkpoint=None,
                        learning_curve=None, exported=None, budget=_Budget())
    assert result["feedback_gain"] is None and result["test_feedback_gain"] is None
    assert "Feedback use" not in summary_of(result, 0)
