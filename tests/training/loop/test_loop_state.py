"""LoopState: the checkpoint's extra keeps the keys it had before the type existed, so
old checkpoints restore and new ones read back equal."""

from mtrl.training.loop.loop_state import LoopState

# A step-12 extra as the trainer wrote it before LoopState (band on).
OLD_EXTRA = {"step": 12, "sft_minutes": 1.5, "run_seconds": 300.25, "config": {"seed": 3},
             "post_sft_success": 0.25, "post_sft_heldout_success": 0.25,
             "post_sft_test_success": 0.5, "band": {"position": 40, "counts": [1, 2]}}


def test_an_old_extra_round_trips():
    state = LoopState.from_extra(OLD_EXTRA)
    assert state.step == 12 and state.run_seconds == 300.25 and state.sft_minutes == 1.5
    assert state.band == {"position": 40, "counts": [1, 2]} and state.config == {"seed": 3}
    assert dict(state.post_sft) == {"post_sft_success": 0.25, "post_sft_heldout_success": 0.25,
                                    "post_sft_test_success": 0.5}
    assert state.extra() == OLD_EXTRA


def test_after_a_step_keeps_the_warm_start_numbers():
    start = LoopState(step=0, run_seconds=60.0, sft_minutes=1.0,
                      post_sft={"post_sft_success": 0.5}, config={"seed": 0})
    assert "band" not in start.extra()  # the band's state is saved from step 1 on
    later = start.after(3, 90.0, {"position": 6})
    assert later.extra() == {"step": 3, "sft_minutes": 1.0, "run_seconds": 90.0,
                             "post_sft_success": 0.5, "config": {"seed": 0},
                             "band": {"position": 6}}
