import jax
import numpy as np
import pytest

from mtrl.credit import ufo_reward


@jax.jit
def ufo_batch(correct, answers, mask):
    return jax.vmap(lambda c, a, m: ufo_reward(c, a, m, gamma=0.5, penalty_coef=0.5))(
        correct, answers, mask)


def test_reference_episodes():
    # Rows (padded to 5 attempts): correct at attempt 2 with answers [3, 3, 5];
    # five wrong answers with 2 distinct; correct at once; attempts after the first
    # correct one are ignored; no attempts at all.
    correct = np.array([[0, 0, 1, 0, 0], [0, 0, 0, 0, 0], [1, 0, 0, 0, 0],
                        [0, 1, 0, 1, 0], [0, 0, 0, 0, 0]], bool)
    answers = np.array([[3, 3, 5, 0, 0], [1, 2, 1, 2, 1], [4, 9, 9, 9, 9],
                        [6, 7, 7, 7, 8], [0, 0, 0, 0, 0]], np.int32)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0],
                     [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], bool)
    out = ufo_batch(correct, answers, mask)
    # Row 3: stops at attempt 1 (answers 6, 7): 0.5 − 0.5·(1 − 2/2) = 0.5.
    np.testing.assert_allclose(out, [0.25 - 0.5 / 3, -0.3, 1.0, 0.5, 0.0], atol=1e-6)


def test_padding_answers_do_not_count_as_distinct():
    # The absent 3rd attempt holds a new id (9); it must not raise E.
    out = ufo_batch(np.zeros((1, 3), bool), np.array([[1, 1, 9]], np.int32),
                    np.array([[True, True, False]]))
    np.testing.assert_allclose(out, [-0.5 * (1 - 1 / 2)], atol=1e-6)


def test_checks():
    with pytest.raises(ValueError, match="rank-1"):
        ufo_reward(np.zeros((2, 2), bool), np.zeros((2, 2), np.int32), gamma=0.5,
                   penalty_coef=0.5)
    with pytest.raises(ValueError, match="integers"):
        ufo_reward(np.zeros(2, bool), np.zeros(2, np.float32), gamma=0.5, penalty_coef=0.5)
    with pytest.raises(ValueError, match="gamma"):
        ufo_reward(np.zeros(2, bool), np.zeros(2, np.int32), gamma=1.5, penalty_coef=0.5)
