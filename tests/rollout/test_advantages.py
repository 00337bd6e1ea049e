"""Per-token advantages of a rollout batch (the trainer's magrpo path) against a
plain-Python recursion over the tree, with and without episodes that end early."""

import jax
import numpy as np
import pytest

from mtrl.rollout import RolloutConfig, StepRollout, make_batch, rollout
from mtrl.training.advantages.estimators import CreditConfig, token_advantages
from tests.rollout.scripted import CharTokenizer, ScriptedBackend, ScriptedEnv


def python_credit(tree, gamma):
    """{(turn, node, agent, g): advantage} by explicit recursion (mean baseline, sum credit)."""
    j_count, g_count = tree.joint_actions, tree.config.num_generations
    records = {r.turn: r for r in tree.turns}

    def node_returns(turn, node):
        rec = records[turn]
        m = list(rec.node_index).index(node)
        out = []
        for j in range(j_count):
            value = float(rec.rewards[m, j])
            if rec.expanded[m, j]:
                value += gamma * np.mean(node_returns(turn + 1, node * j_count + j))
            out.append(value)
        return out

    credit = {}
    for rec in tree.turns:
        for m, node in enumerate(rec.node_index):
            returns = node_returns(rec.turn, int(node))
            adv = [r - np.mean(returns) for r in returns]
            for a in range(tree.config.num_agents):
                for g in range(g_count):
                    credit[(rec.turn, int(node), a, g)] = sum(
                        adv[j] for j in range(j_count) if tree.joint_index[j, a] == g)
    return credit


@pytest.mark.parametrize("ends", [False, True])
@pytest.mark.parametrize("mode", ["align", "cross"])
def test_token_advantages_match_python_recursion(mode, ends):
    config = RolloutConfig(num_turns=3, num_generations=2, num_agents=2, joint_mode=mode,
                           termination_threshold=0.5, discount=0.9, max_new_tokens=32,
                           max_context=4096)
    tree = rollout([0, 1, 2], ScriptedEnv(2, end_on_done=ends), ScriptedBackend(),
                   CharTokenizer(), config, jax.random.key(0))
    ended = sum(int(r.ended.sum()) for r in tree.turns[:-1])
    assert (ended > 0) == ends  # the scripted rewards hit 1.0 on some early steps
    batch = make_batch(tree)
    adv = np.asarray(token_advantages(CreditConfig(), StepRollout(tree, batch), 0.9))
    expected = python_credit(tree, 0.9)
    loss_mask = np.asarray(batch.loss_mask)
    rows = int((np.asarray(batch.row_turn) > 0).sum())
    assert rows == sum(len(r.node_index) * 2 for r in tree.turns)
    for c in range(rows):
        t, node, g = (int(np.asarray(x)[c]) for x in
                      (batch.row_turn, batch.row_node, batch.row_sample))
        for a in range(2):
            values = adv[a, c][loss_mask[a, c]]
            assert len(values) > 0
            np.testing.assert_allclose(values, expected[(t, node, a, g)], atol=1e-5)
    assert not adv[:, rows:].any()  # padding rows carry nothing
    assert np.isfinite(adv).all()
