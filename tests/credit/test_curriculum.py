import jax
import numpy as np
import pytest

from mtrl.credit import (BandFilterConfig, LearnableBandFilter, back_to_front_start,
                         back_to_front_turn_mask, front_to_back_turn_mask,
                         front_to_back_window)


@jax.jit
def schedules(step):
    return (front_to_back_window(step, 10, 4), back_to_front_start(step, 10, 4),
            front_to_back_turn_mask(np.array([0, 1, 2, 3, 4]), step, 10, 4),
            back_to_front_turn_mask(np.array([0, 1, 2, 3, 4]), step, 10, 4))


def test_tcod_schedules_by_hand():
    steps = [0, 9, 10, 25, 30, 1000]
    got = [schedules(np.int32(s)) for s in steps]
    # W = min(1 + ⌊step/10⌋, 4); k = max(0, min(3 − ⌊step/10⌋, 3)).
    assert [int(w) for w, *_ in got] == [1, 1, 2, 3, 4, 4]
    assert [int(k) for _, k, *_ in got] == [3, 3, 2, 1, 0, 0]
    # step 25: W = 3 → turns 1..3 trained; k = 1 → 0-indexed turns 1..3 (1-based 2..4).
    np.testing.assert_array_equal(got[3][2], [False, True, True, True, False])
    np.testing.assert_array_equal(got[3][3], [False, False, True, True, True])


def test_schedule_checks():
    with pytest.raises(ValueError, match="steps_per_stage"):
        front_to_back_window(0, 0, 4)
    with pytest.raises(ValueError, match="num_turns"):
        back_to_front_start(0, 5, 0)


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
