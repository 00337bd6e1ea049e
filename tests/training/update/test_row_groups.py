"""REFUEL's pairs share a parent through the PPO shuffle and the zero-advantage filter."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.rollout import RolloutConfig, StepRollout, make_batch, rollout
from mtrl.training.advantages.estimators import CreditConfig, token_advantages
from mtrl.training.update.minibatch import policy_minibatch
from mtrl.training.update.ppo_epochs import ppo_update
from mtrl.training.update.row_filter import keep_informative_groups
from mtrl.training.update.row_groups import check_groups, group_size
from tests.rollout.scripted import CharTokenizer, ScriptedBackend
from tests.training.signal_env import SignalEnv


class Recorder:
    """A stand-in train step that records the parent of every row it is given."""

    num_agents = 2

    def __init__(self):
        self.minibatches = []

    def __call__(self, state, minibatch):
        self.minibatches.append(np.asarray(minibatch.tokens[0, :, 0]))
        return state, {}


def parent_tagged_rows(num_generations=4):
    config = RolloutConfig(num_turns=2, num_generations=num_generations, num_agents=2,
                           joint_mode="align", termination_threshold=0.5,
                           max_new_tokens=32, max_context=4096)
    tree = rollout([0, 1, 2], SignalEnv(2), ScriptedBackend(), CharTokenizer(), config,
                   jax.random.key(1))
    batch = make_batch(tree)
    rows = policy_minibatch(batch, token_advantages(CreditConfig(), StepRollout(tree, batch), 1.0))
    # Token 0 of every row names its parent node (turn, node); padding rows get -1.
    parent = np.where(np.asarray(batch.row_turn) > 0,
                      np.asarray(batch.row_turn) * 1000 + np.asarray(batch.row_node), -1)
    tokens = rows.tokens.at[:, :, 0].set(jnp.asarray(parent, jnp.int32)[None])
    return batch, rows.replace(tokens=tokens)


def assert_pairs_share_parents(minibatch_parents):
    pairs = minibatch_parents.reshape(-1, 2)
    real = (pairs >= 0).all(axis=1)
    assert real.any()
    np.testing.assert_array_equal(pairs[real, 0], pairs[real, 1])


@pytest.mark.parametrize("drop_zero_advantage", [False, True])
def test_refuel_pairs_share_a_parent(drop_zero_advantage):
    batch, rows = parent_tagged_rows()
    size = group_size("refuel")
    check_groups(batch, size)
    if drop_zero_advantage:
        rows, kept = keep_informative_groups(rows, size, min_rows=8)
        assert kept % 2 == 0 and kept > 0
    recorder = Recorder()
    ppo_update(recorder, None, rows, epochs=3, minibatches=2, key=jax.random.key(0),
               group_size=size)
    assert len(recorder.minibatches) == 6
    for parents in recorder.minibatches:
        assert_pairs_share_parents(parents)


def test_row_shuffle_would_break_pairs():
    """The test above can fail: a row-wise shuffle mixes parents."""
    _, rows = parent_tagged_rows()
    recorder = Recorder()
    ppo_update(recorder, None, rows, epochs=3, minibatches=2, key=jax.random.key(0))
    with pytest.raises(AssertionError):
        for parents in recorder.minibatches:
            assert_pairs_share_parents(parents)


def test_odd_generations_cannot_pair():
    config = RolloutConfig(num_turns=1, num_generations=3, num_agents=2, max_new_tokens=32,
                           max_context=4096)
    tree = rollout([0, 1], SignalEnv(2), ScriptedBackend(), CharTokenizer(), config,
                   jax.random.key(1))
    with pytest.raises(ValueError, match="do not share a parent"):
        check_groups(make_batch(tree), 2)
