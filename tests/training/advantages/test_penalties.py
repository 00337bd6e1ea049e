"""The filters section: DAPO's overlong penalty per completion and SimpleTIR's void-turn
mask (void completions and the subtrees continuing from them leave the loss)."""

import jax
import numpy as np
import pytest

from mtrl.credit import row_advantages
from mtrl.rollout import RolloutConfig, StepRollout, make_batch, rollout
from mtrl.training.advantages.penalties import FilterConfig, completion_lengths, overlong_penalty
from mtrl.training.advantages.loss_mask import void_keep_mask
from tests.rollout.scripted import CharTokenizer, ScriptedBackend, digest
from tests.training.signal_env import SignalEnv


def scripted(mode="cross"):
    config = RolloutConfig(num_turns=3, num_generations=2, num_agents=2, joint_mode=mode,
                           termination_threshold=0.9, max_new_tokens=32, max_context=4096)
    tree = rollout([0, 1], SignalEnv(2), ScriptedBackend(), CharTokenizer(), config,
                   jax.random.key(0))
    return tree, make_batch(tree)


def test_overlong_penalty_follows_dapo_per_completion():
    tree, batch = scripted()
    lengths = completion_lengths(batch)
    real = np.asarray(batch.row_turn) > 0
    low, high = lengths[:, real].min(), lengths[:, real].max()
    assert low < high  # the scripted completions differ in length
    max_len, cache = int(high), int(high - low)
    penalty = overlong_penalty(batch, max_len, cache, num_tasks=2)
    back = np.asarray(row_advantages(penalty, batch.row_turn, batch.row_node,
                                     batch.row_sample))[:, real]
    expected = np.clip((lengths[:, real] - (max_len - cache)) / cache, 0.0, 1.0)
    np.testing.assert_allclose(back, expected, rtol=1e-6)
    assert back.max() == 1.0 and back.min() == 0.0


def test_void_completions_and_their_subtrees_leave_the_loss():
    tree, batch = scripted()
    keep = void_keep_mask(StepRollout(tree, batch))
    joint, n = tree.joint_actions, 2
    # Independent check, turn by turn: a row is kept iff its own completion is not void
    # and no completion on the way from the root to its node was void.
    voided_nodes = set()
    for record in tree.turns:
        for m, node in enumerate(record.node_index):
            for j in range(joint):
                texts = [record.texts[a][m * 2 + int(tree.joint_index[j, a])] for a in range(n)]
                void_here = [digest(t, "void") % 4 == 0 for t in texts]
                if any(void_here) or (record.turn, int(node)) in voided_nodes:
                    voided_nodes.add((record.turn + 1, int(node) * joint + j))
    seen_void = seen_kept = 0
    for c in np.flatnonzero(np.asarray(batch.row_turn) > 0):
        t, node, g = (int(np.asarray(x)[c]) for x in
                      (batch.row_turn, batch.row_node, batch.row_sample))
        record = tree.turns[t - 1]
        m = list(record.node_index).index(node)
        for a in range(n):
            own_void = digest(record.texts[a][m * 2 + g], "void") % 4 == 0
            expected = not own_void and (t, node) not in voided_nodes
            assert keep[a, c] == expected
            seen_void += not expected
            seen_kept += expected
    assert seen_void and seen_kept  # both cases occur in this tree


@pytest.mark.parametrize("fields", [{"overlong_cache": -1}, {"void_turns": "yes"}])
def test_bad_filter_config(fields):
    with pytest.raises(ValueError):
        FilterConfig(**fields)
