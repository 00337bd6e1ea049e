import jax
import numpy as np
import pytest

from tests.credit.jitted import assert_trees_match, vmapped_and_looped
from mtrl.credit import INFORMATION_GAINS, final_turn_mask, igpo_advantages, igpo_turn_rewards
from mtrl.credit.igpo import logprob_gain, probability_gain

# Two trajectories, up to K = 3 turns. Probabilities of the ground truth before any turn
# (index 0) and after each turn; trajectory 1 stops after 2 turns.
PROBS = np.array([[0.1, 0.3, 0.6, 0.9], [0.2, 0.1, 0.5, 0.7]])
TRUTH_LOGPROB = np.log(PROBS).astype(np.float32)
OUTCOME = np.array([1.0, 0.0], np.float32)
MASK = np.array([[True, True, True], [True, True, False]])


def zscore(x, ddof=1, eps=1e-6):
    return (x - x.mean()) / (x.std(ddof=ddof) + eps)


def discount(a, gamma, length):
    return [sum(gamma ** (k - t) * a[k] for k in range(t, length)) for t in range(length)]


@jax.jit
def igpo_all(truth, outcome, mask):
    rewards = jax.vmap(lambda m, o, k: (igpo_turn_rewards(m, o, k),
                                        igpo_turn_rewards(m, o, k, gain="logprob")))
    return {
        "rewards": rewards(truth, outcome, mask),
        "joint": igpo_advantages(truth, outcome, mask, gamma=0.5),
        "separate": igpo_advantages(truth, outcome, mask, gamma=0.5, normalization="separate"),
        "final": jax.vmap(final_turn_mask)(mask),
    }


def test_turn_rewards_probability_and_logprob_gains():
    out = igpo_all(TRUTH_LOGPROB, OUTCOME, MASK)
    prob, logprob = out["rewards"]
    np.testing.assert_allclose(prob, [[0.2, 0.3, 1.0], [-0.1, 0.0, 0.0]], atol=1e-6)
    np.testing.assert_allclose(logprob, [[np.log(3), np.log(2), 1.0], [np.log(0.5), 0, 0]],
                               atol=1e-6)
    np.testing.assert_array_equal(out["final"], [[False, False, True], [False, True, False]])


def test_joint_normalization_then_discounting():
    out = igpo_all(TRUTH_LOGPROB, OUTCOME, MASK)
    z = zscore(np.array([0.2, 0.3, 1.0, -0.1, 0.0]))
    want = [discount(z[:3], 0.5, 3), discount(z[3:], 0.5, 2) + [0.0]]
    np.testing.assert_allclose(out["joint"], want, rtol=1e-5, atol=1e-6)


def test_separate_normalization():
    out = igpo_all(TRUTH_LOGPROB, OUTCOME, MASK)
    gains = zscore(np.array([0.2, 0.3, -0.1]))  # information-gain rewards
    outcomes = zscore(np.array([1.0, 0.0]))  # ±0.7071
    a0 = [gains[0], gains[1], outcomes[0]]
    a1 = [gains[2], outcomes[1]]
    want = [discount(a0, 0.5, 3), discount(a1, 0.5, 2) + [0.0]]
    np.testing.assert_allclose(out["separate"], want, rtol=1e-5, atol=1e-6)


def test_vmap_over_groups_matches_loop():
    rng = np.random.default_rng(0)
    other = np.log(rng.uniform(0.05, 0.95, size=(2, 4))).astype(np.float32)
    truth = np.stack([TRUTH_LOGPROB, other])
    outcome = np.array([OUTCOME, [0.0, 1.0]], np.float32)
    mask = np.stack([MASK, [[True, False, False], [True, True, True]]])
    for opts in (dict(gamma=0.5), dict(gamma=0.9, normalization="separate", gain="logprob")):
        mapped, looped = vmapped_and_looped(
            lambda t, o, m: igpo_advantages(t, o, m, **opts), truth, outcome, mask)
        assert_trees_match(mapped, looped)
        if opts["gamma"] == 0.5:  # group 0 is the joint-normalization hand example
            z = zscore(np.array([0.2, 0.3, 1.0, -0.1, 0.0]))
            np.testing.assert_allclose(mapped[0], [discount(z[:3], 0.5, 3),
                                                   discount(z[3:], 0.5, 2) + [0.0]],
                                       rtol=1e-5, atol=1e-6)


def test_gain_functions_check_their_input():
    np.testing.assert_allclose(probability_gain(np.log([0.1, 0.3, 0.6])), [0.2, 0.3],
                               atol=1e-6)
    np.testing.assert_allclose(logprob_gain(np.array([1.0, 0.5, 2.0])), [-0.5, 1.5])
    for gain in (probability_gain, logprob_gain):
        with pytest.raises(ValueError, match=r"mean_logprob must have shape \[K\+1\]"):
            gain(np.zeros((2, 3), np.float32))  # a group: vmap instead
        with pytest.raises(ValueError, match="K >= 1"):
            gain(np.zeros(1, np.float32))  # no turn


def test_registry_and_checks():
    assert INFORMATION_GAINS.names() == ("logprob", "prob")
    with pytest.raises(ValueError, match="normalization"):
        igpo_advantages(TRUTH_LOGPROB, OUTCOME, MASK, normalization="per_turn")
    with pytest.raises(ValueError, match=r"\[K\+1\]"):
        igpo_turn_rewards(np.zeros(1, np.float32), 1.0)
    with pytest.raises(ValueError, match="turn_mask"):
        igpo_advantages(TRUTH_LOGPROB, OUTCOME, MASK[:, :2])
    with pytest.raises(KeyError, match="information gain must be one of logprob, prob"):
        igpo_turn_rewards(TRUTH_LOGPROB[0], 1.0, gain="entropy")
