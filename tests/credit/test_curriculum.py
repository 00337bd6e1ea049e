import jax
import numpy as np
import pytest

from tests.credit.jitted import assert_trees_match, vmapped_and_looped
from mtrl.credit import (BandFilterConfig, LearnableBandFilter, back_to_front_start,
                         back_to_front_turn_mask, front_to_back_turn_mask,
                         front_to_back_window)


def schedule_values(step):
    """W, k and both turn masks over 1-based turns 0..4 (c = 10, 4 turns) at one step."""
    return (front_to_back_window(step, 10, 4), back_to_front_start(step, 10, 4),
            front_to_back_turn_mask(np.array([0, 1, 2, 3, 4]), step, 10, 4),
            back_to_front_turn_mask(np.array([0, 1, 2, 3, 4]), step, 10, 4))


schedules = jax.jit(schedule_values)


def test_tcod_schedules_by_hand():
    steps = [0, 9, 10, 25, 30, 1000]
    got = [schedules(np.int32(s)) for s in steps]
    # W = min(1 + ⌊step/10⌋, 4); k = max(0, min(3 − ⌊step/10⌋, 3)).
    assert [int(w) for w, *_ in got] == [1, 1, 2, 3, 4, 4]
    assert [int(k) for _, k, *_ in got] == [3, 3, 2, 1, 0, 0]
    # step 25: W = 3 → turns 1..3 trained; k = 1 → 0-indexed turns 1..3 (1-based 2..4).
    np.testing.assert_array_equal(got[3][2], [False, True, True, True, False])
    np.testing.assert_array_equal(got[3][3], [False, False, True, True, True])


def test_tcod_schedules_vmap_over_steps_matches_loop():
    steps = np.array([0, 9, 10, 25, 30, 1000], np.int32)
    mapped, looped = vmapped_and_looped(schedule_values, steps)
    assert_trees_match(mapped, looped)
    window, start, front_mask, back_mask = mapped
    np.testing.assert_array_equal(window, [1, 1, 2, 3, 4, 4])
    np.testing.assert_array_equal(start, [3, 3, 2, 1, 0, 0])
    # Step 10: W = 2 → turns 1..2; k = 2 → 1-based turns 3..4. Turn 0 is never trained.
    np.testing.assert_array_equal(front_mask[2], [False, True, True, False, False])
    np.testing.assert_array_equal(back_mask[2], [False, False, False, True, True])
    np.testing.assert_array_equal(front_mask[:, 0] | back_mask[:, 0], False)


def test_schedule_checks():
    with pytest.raises(ValueError, match="steps_per_stage"):
        front_to_back_window(0, 0, 4)
    with pytest.raises(ValueError, match="num_turns"):
        back_to_front_start(0, 5, 0)
    for turn_mask in (front_to_back_turn_mask, back_to_front_turn_mask):
        with pytest.raises(ValueError, match="turn_index must have an integer dtype"):
            turn_mask(np.array([0.0, 1.0, 2.0], np.float32), 0, 10, 4)
        with pytest.raises(ValueError, match="step must be a scalar"):
            turn_mask(np.array([0, 1, 2], np.int32), np.array([0, 10]), 10, 4)


def test_band_filter_default_band_is_inclusive():
    config = BandFilterConfig()
    assert (config.low, config.high) == (0.1, 0.9)
    # Window 20 (band left at its defaults) makes the rates 0.05, 0.1, 0.9, 0.95 exact:
    # k successes of 20 attempts, k = 1, 2, 18, 19.
    band = LearnableBandFilter(4, BandFilterConfig(window=20))
    for task, successes in enumerate((1, 2, 18, 19)):
        band.record([task] * 20, [True] * successes + [False] * (20 - successes))
    np.testing.assert_array_equal(band.success_rate(), [0.05, 0.1, 0.9, 0.95])
    np.testing.assert_array_equal(band.keep(), [False, True, True, False])  # [0.1, 0.9]
    # Fully default filter (window 16): 1/10 and 9/10 sit on the edges and are kept;
    # 1/16 = 0.0625 and 15/16 = 0.9375 lie just outside and are dropped.
    band = LearnableBandFilter(4)
    for task, (successes, attempts) in enumerate(((1, 16), (1, 10), (9, 10), (15, 16))):
        band.record([task] * attempts, [True] * successes + [False] * (attempts - successes))
    np.testing.assert_array_equal(band.success_rate(), [0.0625, 0.1, 0.9, 0.9375])
    np.testing.assert_array_equal(band.keep(), [False, True, True, False])


def test_band_filter_keeps_learnable_tasks():
    band = LearnableBandFilter(4, BandFilterConfig(low=0.1, high=0.9, window=4))
    # Task 0 always solved, 1 never, 2 half the time, 3 never attempted.
    band.record([0, 0, 0, 0, 1, 1, 2, 2], [True, True, True, True, False, False, True, False])
    np.testing.assert_array_equal(band.keep(), [False, False, True, True])
    np.testing.assert_allclose(band.success_rate()[:3], [1.0, 0.0, 0.5])
    assert np.isnan(band.success_rate()[3])


def test_band_filter_window_forgets_old_attempts():
    band = LearnableBandFilter(1, BandFilterConfig(window=3))
    band.record([0] * 3, [False] * 3)
    assert not band.keep()[0]
    band.record([0, 0], [True, True])  # window now [True, True, False] → 2/3
    np.testing.assert_allclose(band.success_rate(), [2 / 3])
    assert band.keep()[0]
    band.record([0], [True])  # all 3 recent attempts solved
    assert not band.keep()[0]


def test_band_filter_min_attempts_and_checks():
    band = LearnableBandFilter(2, BandFilterConfig(min_attempts=3))
    band.record([0, 0], [True, True])
    assert band.keep()[0]  # too few attempts to judge
    band.record([0], [True])
    assert not band.keep()[0]
    with pytest.raises(ValueError, match="task ids"):
        band.record([2], [True])
    with pytest.raises(ValueError, match="low"):
        BandFilterConfig(low=0.5, high=0.4)
    with pytest.raises(ValueError, match="min_attempts"):
        BandFilterConfig(window=2, min_attempts=3)
