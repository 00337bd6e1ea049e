"""The paired t interval and the verdict rule against hand-computed values."""

import math

import pytest

from mtrl.evidence.paired_ci import non_inferior, paired_differences, t_interval, verdict


def test_paired_differences_drop_seeds_missing_an_arm():
    assert paired_differences([0.1, None, 0.5], [0.4, 0.9, 0.2]) == pytest.approx([0.3, -0.3])
    with pytest.raises(ValueError, match="3 seeds for arm A, 2 for arm B"):
        paired_differences([0, 1, 2], [0, 1])


def test_t_interval_by_hand():
    # d = (1, 2, 3, 6): mean 3, s^2 = (4 + 1 + 0 + 9) / 3 = 14/3, t_{0.975, 3} = 3.182446,
    # half = 3.182446 * sqrt(14/3) / 2 = 3.437435.
    mean, (lo, hi) = t_interval([1.0, 2.0, 3.0, 6.0])
    assert mean == 3.0
    assert hi - mean == pytest.approx(3.182446 * math.sqrt(14 / 3) / 2, rel=1e-6)
    assert lo == pytest.approx(3.0 - 3.437435, abs=1e-5)
    # Two seeds: t_{0.975, 1} = 12.7062; d = (0, 0.2): s = 0.141421, half = 1.27062.
    mean, (lo, hi) = t_interval([0.0, 0.2])
    assert (mean, hi) == pytest.approx((0.1, 0.1 + 1.270620), abs=1e-5)
    assert t_interval([0.5, 0.5, 0.5]) == (0.5, (0.5, 0.5))
    with pytest.raises(ValueError, match=">= 2 paired seeds"):
        t_interval([0.3])


@pytest.mark.parametrize("ci,direction,min_effect,expected", [
    ((0.05, 0.6), +1, 0.1, "reproduced"),
    ((-0.4, 0.3), +1, 0.1, "inconclusive"),
    ((-0.4, 0.05), +1, 0.1, "not_reproduced"),     # rules out +0.1
    ((-0.6, -0.2), +1, 0.0, "not_reproduced"),     # the opposite sign
    ((-30.0, -8.0), -1, 6.0, "reproduced"),        # fewer samples predicted
    ((-7.0, 2.0), -1, 6.0, "inconclusive"),
    ((-3.0, 2.0), -1, 6.0, "not_reproduced"),      # rules out -6
])
def test_verdict_rule(ci, direction, min_effect, expected):
    assert verdict(ci, direction, min_effect) == expected


def test_non_inferiority_guard():
    assert non_inferior((-0.05, 0.1), 0.1) == "holds"
    assert non_inferior((-0.3, 0.1), 0.1) == "unclear"
    assert non_inferior((-0.5, -0.2), 0.1) == "fails"
    with pytest.raises(ValueError, match="direction must be"):
        verdict((0, 1), 0, 0.1)
