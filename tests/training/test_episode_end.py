"""Rows played after their episode ended (math: solved earlier) leave the loss; all
others keep their loss mask."""

import jax
import numpy as np

from mtrl.data.gsm8k import MathTask
from mtrl.envs.math import MathEnv
from mtrl.rollout import RolloutConfig, make_batch, rollout
from mtrl.tokenizers import load_tokenizer
from mtrl.training.episode_end import drop_ended, ended_keep_mask, ended_nodes
from tests.rollout.scripted import ScriptedBackend


class AnswerBackend(ScriptedBackend):
    """Sample g of every node answers "7" when g == 0, else something wrong."""

    def generate(self, agent, contexts, num_samples, max_new_tokens, key):
        samples, after = super().generate(agent, contexts, num_samples, max_new_tokens, key)
        tokens = [list(b"\\boxed{7}") if i % num_samples == 0 else list(b"\\boxed{1}")
                  for i in range(len(samples.tokens))]
        histories = [row + toks for row in contexts.tokens for toks in
                     tokens[:num_samples]]
        return (samples.__class__(tokens=tokens, logprobs=[np.zeros(len(t), np.float32)
                                                           for t in tokens]),
                after.__class__(tokens=histories))


def test_rows_after_a_solved_turn_leave_the_loss():
    config = RolloutConfig(num_turns=3, num_generations=2, num_agents=1, max_new_tokens=16,
                           max_context=512)
    tree = rollout([MathTask("t/0", "2 + 5?", "7")], MathEnv(), AnswerBackend(),
                   load_tokenizer("byte"), config, jax.random.key(0))
    # Turn 1: j=0 solves, j=1 does not; the node (mean reward 0.5) expands both.
    assert tree.turns[0].rewards.tolist() == [[1.0, 0.0]]
    dead = ended_nodes(tree)
    assert (2, 0) in dead and (2, 1) not in dead  # child of the solved branch is over
    assert {(3, 0), (3, 1)} <= dead  # its descendants too
    batch = make_batch(tree)
    keep = ended_keep_mask(tree, batch)
    rows = {(int(t), int(n)) for t, n in zip(np.asarray(batch.row_turn),
                                             np.asarray(batch.row_node)) if t > 0}
    assert rows - dead and rows & dead
    dropped = drop_ended(batch, tree)
    for c, (t, n) in enumerate(zip(np.asarray(batch.row_turn), np.asarray(batch.row_node))):
        after, before = np.asarray(dropped.loss_mask[:, c]), np.asarray(batch.loss_mask[:, c])
        if t > 0 and (int(t), int(n)) in dead:
            assert before.any() and not after.any() and not keep[c]
        else:
            assert (after == before).all()
