"""time_split: a run's minutes by part, against hand-computed sums."""

import pytest

from mtrl.training.logging.time_split import time_split

RECORDS = [
    {"step": 0, "time/heldout_eval_s": 30.0},
    {"step": 1, "step_time_s": 10.0, "time/rollout_s": 3.0, "time/env_s": 1.0,
     "time/update_s": 6.0},
    {"step": 2, "step_time_s": 20.0, "time/rollout_s": 5.0, "time/env_s": 1.0,
     "time/update_s": 14.0, "time/heldout_eval_s": 30.0},
]


def test_parts_sum_to_the_whole():
    split = time_split(RECORDS, sft_minutes=2.0, seconds_at_last_step=300.0,
                       total_seconds=360.0)
    assert split["total"] == 6.0 and split["sft"] == 2.0
    assert split["rl_steps"] == pytest.approx(0.5) and split["rl_step_count"] == 2
    assert split["rollout"] == pytest.approx(8 / 60) and split["update"] == pytest.approx(20 / 60)
    assert split["env"] == pytest.approx(2 / 60)
    assert split["validation"] == pytest.approx(1.0) and split["validation_count"] == 2
    # 360 - 300 s, less step 2's validation (logged after the step's seconds were taken)
    assert split["after_rl"] == pytest.approx(0.5)
    # 360 - 120 (SFT) - 30 (steps) - 60 (validations) - 30 (after RL) = 120 s left
    assert split["other"] == pytest.approx(2.0)


def test_a_run_without_timed_validations_keeps_them_in_other():
    untimed = [{k: v for k, v in r.items() if k != "time/heldout_eval_s"} for r in RECORDS]
    split = time_split(untimed, 2.0, 300.0, 360.0)
    assert split["validation"] is None and split["validation_count"] == 0
    assert split["after_rl"] == pytest.approx(1.0) and split["other"] == pytest.approx(2.5)


@pytest.mark.parametrize("args, match", [
    ((-1.0, 300.0, 360.0), "sft_minutes"),
    ((2.0, 400.0, 360.0), "seconds_at_last_step 400.0 > total_seconds"),
])
def test_bad_inputs_are_refused(args, match):
    with pytest.raises(ValueError, match=match):
        time_split(RECORDS, *args)
