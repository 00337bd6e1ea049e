"""StepRollout: a step's tree and its rows, made once and changed only as a whole."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.rollout import RolloutConfig, StepRollout, make_batch, rollout
from tests.rollout.scripted import CharTokenizer, ScriptedBackend, ScriptedEnv


@pytest.fixture(scope="module")
def tree():
    config = RolloutConfig(num_turns=2, num_generations=2, num_agents=2, joint_mode="align",
                           termination_threshold=0.5, max_new_tokens=32, max_context=4096)
    return rollout([0, 1], ScriptedEnv(2), ScriptedBackend(), CharTokenizer(), config,
                   jax.random.key(0))


def test_of_lays_out_the_rows_as_make_batch(tree):
    made = StepRollout.of(tree, length=256)
    assert made.tree is tree
    expected = make_batch(tree, length=256)
    for name in ("tokens", "token_mask", "loss_mask", "old_logprobs", "row_turn", "row_node"):
        np.testing.assert_array_equal(getattr(made.batch, name), getattr(expected, name))
    assert made.batch.tokens.shape[-1] == 256


def test_a_new_loss_mask_replaces_only_the_mask(tree):
    made = StepRollout.of(tree)
    cleared = jnp.zeros_like(made.batch.loss_mask)
    changed = made.with_loss_mask(cleared)
    assert changed.tree is made.tree and changed is not made
    assert not np.asarray(changed.batch.loss_mask).any()
    assert np.asarray(made.batch.loss_mask).any()  # the original is unchanged
    np.testing.assert_array_equal(changed.batch.tokens, made.batch.tokens)


def test_a_loss_mask_of_another_shape_is_refused(tree):
    made = StepRollout.of(tree)
    with pytest.raises(ValueError, match="loss mask must be"):
        made.with_loss_mask(made.batch.loss_mask[:, :1])
