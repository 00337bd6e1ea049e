import jax
import numpy as np
import pytest

from tests.credit.jitted import jitted
from mtrl.credit import (dapo_overlong_penalty, dynamic_sampling_keep, void_turn_keep_mask,
                         void_turns)


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


def test_void_turns_and_trajectory_mask():
    code = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 1]], bool)
    answer = np.array([[0, 0, 1], [0, 0, 1], [0, 0, 0]], bool)
    mask = np.array([[1, 1, 1], [1, 1, 1], [1, 1, 0]], bool)

    @jax.jit
    def both(c, a, m):
        return jax.vmap(void_turns)(c, a, m), jax.vmap(void_turn_keep_mask)(c, a, m)

    void, keep = both(code, answer, mask)
    # Trajectory 0: turn 2 has neither code nor answer → void → dropped.
    # Trajectory 2: turns 1-2 void (turn 3 is absent and does not count).
    np.testing.assert_array_equal(void, [[0, 1, 0], [0, 0, 0], [1, 1, 0]])
    np.testing.assert_array_equal(keep, [False, True, False])


def test_dynamic_sampling_keep():
    correct = np.array([[1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 1, 0], [1, 1, 1, 0]], bool)
    mask = np.array([[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 0]], bool)
    keep = jax.jit(jax.vmap(dynamic_sampling_keep))(correct, mask)
    # Last group: its only failure is absent, so all present members succeeded.
    np.testing.assert_array_equal(keep, [False, False, True, False])


def test_checks():
    with pytest.raises(ValueError, match="cache_length"):
        dapo_overlong_penalty(np.array([1]), max_length=10, cache_length=20)
    with pytest.raises(ValueError, match="integer"):
        dapo_overlong_penalty(np.array([1.0]), max_length=10, cache_length=5)
    with pytest.raises(ValueError, match="rank 1"):
        void_turns(np.zeros((2, 2), bool), np.zeros((2, 2), bool))
    with pytest.raises(ValueError, match="mask shape"):
        dynamic_sampling_keep(np.zeros(3, bool), np.zeros(2, bool))
