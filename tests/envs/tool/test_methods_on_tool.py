"""The reward recipe and SimpleTIR's void-turn filter on a hand-scripted tool tree:
episode totals from the tool environment's own step info (correct, invalid_calls),
and void turns leaving the loss with their subtrees."""

import jax
import numpy as np
import pytest

from mtrl.credit import RewardRecipe
from mtrl.data.gsm8k import MathTask
from mtrl.envs.sandbox import Limits, SandboxPool
from mtrl.envs.tool import ToolEnv, ToolEnvConfig
from mtrl.rollout import RolloutConfig, StepRollout, make_batch, rollout
from mtrl.rollout.backend import Contexts, PolicyBackend, Samples
from mtrl.tokenizers import load_tokenizer
from mtrl.training.advantages.loss_mask import void_keep_mask
from mtrl.training.score.recipe import apply_recipe

# [turn][g]: sample 0 makes an invalid call then answers right; sample 1 writes
# neither code nor an answer (void) then answers wrong.
SCRIPT = [["```python\n1/0\n```", "let me think"], ["\\boxed{391}", "\\boxed{5}"]]


class ScriptBackend(PolicyBackend):
    def __init__(self, tokenizer):
        self.tokenizer, self.turn = tokenizer, 0

    def begin(self, agent, prompts):
        return Contexts(tokens=[list(p) for p in prompts])

    def generate(self, agent, contexts, num_samples, max_new_tokens, key):
        texts = SCRIPT[self.turn]
        self.turn += 1
        tokens, histories = [], []
        for row in contexts.tokens:
            for g in range(num_samples):
                toks = self.tokenizer.encode(texts[g]) + [self.tokenizer.eos_id]
                tokens.append(toks)
                histories.append(row + toks)
        return (Samples(tokens=tokens, logprobs=[np.zeros(len(t), np.float32) for t in tokens]),
                Contexts(tokens=histories))

    def extend(self, agent, contexts, rows, new_tokens):
        return Contexts(tokens=[contexts.tokens[r] + list(t) for r, t in zip(rows, new_tokens)])


@pytest.fixture(scope="module")
def tree():
    tokenizer = load_tokenizer("byte")
    config = RolloutConfig(num_turns=2, num_generations=2, num_agents=1, max_new_tokens=64,
                           max_context=1024)
    with SandboxPool(num_workers=1, limits=Limits(wall_s_per_test=1.0, wall_s_total=2.0)) as p:
        env = ToolEnv(ToolEnvConfig(max_turns=2), sandbox=p)
        yield rollout([MathTask("t/0", "What is 17 * 23?", "391")], env,
                      ScriptBackend(tokenizer), tokenizer, config, jax.random.key(0))


def test_recipe_totals_from_the_tool_step_info(tree):
    first = tree.turns[0].infos
    assert [i["invalid_calls"] for i in first] == [1, 0]
    assert [i["void"] for i in first] == [(False,), (True,)]
    recipe = RewardRecipe(max_turns=2, on_dominance="raise")
    shaped = apply_recipe(recipe, tree)
    assert shaped.turns[0].rewards.tolist() == [[0.0, 0.0]]  # not leaves
    second = shaped.turns[1]
    by_node = {int(n): second.rewards[m].tolist() for m, n in enumerate(second.node_index)}
    # node 0 followed the invalid call (−0.05), node 1 the void turn; 2 turns: −0.02.
    np.testing.assert_allclose(by_node[0], [1 - 0.02 - 0.05, -1 - 0.02 - 0.05], atol=1e-6)
    np.testing.assert_allclose(by_node[1], [1 - 0.02, -1 - 0.02], atol=1e-6)


def test_void_turn_filter_drops_the_void_turn_and_its_subtree(tree):
    batch = make_batch(tree)
    keep = void_keep_mask(StepRollout(tree, batch))[0]
    turn, node, sample = (np.asarray(x) for x in (batch.row_turn, batch.row_node,
                                                  batch.row_sample))
    for c in np.flatnonzero(turn > 0):
        t, n, g = int(turn[c]), int(node[c]), int(sample[c])
        expected = not ((t == 1 and g == 1) or (t == 2 and n == 1))
        assert keep[c] == expected, (t, n, g)
