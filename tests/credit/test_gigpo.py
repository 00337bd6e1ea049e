import collections

import jax
import numpy as np
import pytest

from tests.credit.jitted import jitted
from mtrl.credit import anchor_group_advantages, gigpo_advantages

EPISODE = np.array([1.0, 0.0, 1.0], np.float32)
STEP_REWARDS = np.array([[0.0, 1.0], [0.0, 0.0], [0.0, 1.0]], np.float32)
STATES = np.array([[7, 8], [7, 9], [5, 8]], np.int32)


def test_hand_example_single_and_vmapped():
    def credit(e, r, s):
        return gigpo_advantages(e, r, s, gamma=0.5, omega=0.5)

    episodes = np.stack([EPISODE, [0.0, 0.0, 3.0]]).astype(np.float32)
    both = jax.jit(lambda e, r, s: (credit(e[0], r[0], s[0]), jax.vmap(credit)(e, r, s)))
    out, stacked = both(episodes, np.stack([STEP_REWARDS] * 2), np.stack([STATES] * 2))
    np.testing.assert_allclose(stacked[0], out, rtol=1e-6)
    # Only the episode term differs: [0, 0, 3] → unbiased std sqrt(3) → [−1, −1, 2] / sqrt(3).
    second = np.array([-1.0, -1.0, 2.0]) / np.sqrt(3)
    first = np.array([1, -2, 1]) / 3 / np.sqrt(1 / 3)
    np.testing.assert_allclose(stacked[1] - stacked[0],
                               np.repeat((second - first)[:, None], 2, axis=1), rtol=1e-5,
                               atol=1e-6)
    # Step returns (γ = 0.5): [[0.5, 1], [0, 0], [0.5, 1]].
    # State 7: {0.5, 0} → ±0.7071 (unbiased std 0.35355); state 8: {1, 1} → 0; 9, 5 singletons.
    # Episode GRPO over [1, 0, 1]: mean 2/3, unbiased std sqrt(1/3) → [0.57735, −1.1547, 0.57735].
    a_e = np.array([1, -2, 1]) / 3 / np.sqrt(1 / 3)
    step = np.array([[1, 0], [-1, 0], [0, 0]]) * (0.25 / np.sqrt(0.125))
    np.testing.assert_allclose(out, a_e[:, None] + 0.5 * step, rtol=1e-5)


def test_masked_steps_and_no_std():
    mask = np.array([[True, True], [True, True], [True, False]])
    out = jitted(gigpo_advantages, EPISODE, STEP_REWARDS, STATES, mask, gamma=1.0, omega=1.0,
                 normalize_std=False)
    # Returns (γ = 1): [[1, 1], [0, 0], [0, absent]]; state 7 → ±0.5, state 8 now a singleton.
    a_e = EPISODE - 2 / 3
    np.testing.assert_allclose(out, [[a_e[0] + 0.5, a_e[0]], [a_e[1] - 0.5, a_e[1]],
                                     [a_e[2], 0.0]], rtol=1e-6, atol=1e-6)


def test_anchor_groups_match_a_dictionary_reference():
    rng = np.random.default_rng(0)
    values = rng.normal(size=40).astype(np.float32)
    ids = rng.integers(0, 12, size=40).astype(np.int32)
    mask = rng.random(40) < 0.85
    out = np.asarray(jitted(anchor_group_advantages, values, ids, mask))
    groups = collections.defaultdict(list)
    for i in np.flatnonzero(mask):
        groups[int(ids[i])].append(i)
    want = np.zeros(40)
    for members in groups.values():
        if len(members) > 1:
            v = values[members].astype(np.float64)
            want[members] = (v - v.mean()) / (v.std(ddof=1) + 1e-6)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    assert any(len(m) == 1 for m in groups.values())  # singletons are exercised


def test_constant_anchor_groups_give_exactly_zero():
    values = np.array([0.1, 0.1, 0.1, 1 / 3, 1 / 3, 0.7], np.float32)
    ids = np.array([4, 4, 4, 2, 2, 9], np.int32)
    np.testing.assert_array_equal(jitted(anchor_group_advantages, values, ids), 0.0)


def test_checks():
    with pytest.raises(ValueError, match="integers"):
        anchor_group_advantages(np.zeros(3, np.float32), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"\[G, K\]"):
        gigpo_advantages(EPISODE, STEP_REWARDS, STATES[:, :1])
    with pytest.raises(ValueError, match="episode_returns"):
        gigpo_advantages(EPISODE[:2], STEP_REWARDS, STATES)
