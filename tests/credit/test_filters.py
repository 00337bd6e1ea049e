import numpy as np
import pytest

from tests.credit.jitted import jitted
import mtrl.credit
from mtrl.credit import dapo_overlong_penalty


def test_dapo_overlong_reference():
    lengths = np.array([16000, 16384, 18432, 20480, 21000], np.int32)
    out = jitted(dapo_overlong_penalty, lengths, max_length=20480, cache_length=4096)
    np.testing.assert_allclose(out, [0.0, 0.0, -0.5, -1.0, -1.0])


def test_dapo_overlong_is_linear_inside_the_cache_window():
    lengths = np.arange(16384, 20481, 512, dtype=np.int32)
    out = np.asarray(jitted(dapo_overlong_penalty, lengths, max_length=20480,
                            cache_length=4096))
    np.testing.assert_allclose(out, -(lengths - 16384) / 4096, atol=1e-6)
    assert np.all(np.diff(out) < 0)


def test_the_sample_filters_have_one_implementation_the_one_that_runs():
    # The void-turn filter and the zero-advantage filter live in mtrl/training/ (advantages/penalties.py,
    # update/row_filter.py), tested there; credit/ keeps no second, never-called copy.
    for name in ("void_turns", "void_turn_keep_mask", "dynamic_sampling_keep"):
        assert not hasattr(mtrl.credit, name), name


def test_checks():
    with pytest.raises(ValueError, match="cache_length"):
        dapo_overlong_penalty(np.array([1]), max_length=10, cache_length=20)
    with pytest.raises(ValueError, match="integer"):
        dapo_overlong_penalty(np.array([1.0]), max_length=10, cache_length=5)
