"""SFT rows equal rollout rows by construction: a rollout whose agents answer with a
revision demonstration's completions trains on exactly the tokens, and the loss
positions, of that demonstration's SFT rows (both built by mtrl.rollout.history)."""

import jax
import numpy as np
import pytest

from mtrl.data.suite import DataConfig, build_suite
from mtrl.data.synthetic import revision_demonstrations
from mtrl.envs.code import CodeEnv, CodeEnvConfig
from mtrl.envs.sandbox import SandboxPool
from mtrl.rollout import RolloutConfig, make_batch, rollout
from mtrl.rollout.backend import Contexts, PolicyBackend, Samples
from mtrl.rollout.formatting import PlainFormat
from mtrl.tokenizers import ByteTokenizer
from mtrl.training.sft.sft import sft_examples
from mtrl.data.demonstrations import revision_pairs


class Teacher(PolicyBackend):
    """Answers turn t with the t-th scripted completion of each agent."""

    def __init__(self, tokenizer, completions):
        self.tok, self.completions, self.turn = tokenizer, completions, [0, 0]

    def begin(self, agent, prompts):
        return Contexts(tokens=[list(p) for p in prompts])

    def generate(self, agent, contexts, num_samples, max_new_tokens, key):
        text = self.completions[agent][self.turn[agent]]
        self.turn[agent] += 1
        ids = self.tok.encode(text) + [self.tok.eos_id]
        rows = [list(r) for r in contexts.tokens]
        return (Samples(tokens=[ids] * len(rows), logprobs=[np.zeros(len(ids))] * len(rows)),
                Contexts(tokens=[r + ids for r in rows]))

    def extend(self, agent, contexts, rows, new_tokens):
        return Contexts(tokens=[contexts.tokens[r] + list(t) for r, t in zip(rows, new_tokens)])


@pytest.mark.parametrize("history_mode", ["full", "feedback"])
def test_sft_rows_are_the_rollout_rows(history_mode):
    suite = build_suite(DataConfig(num_train=20, num_eval=4, options=dict(
        probe_form="difference", heldout_by="function", offset_range=(0, 9),
        terms=("x", "2x", "3x", "4x", "neg"), probe_xs=(1,))), 0)
    tok, fmt = ByteTokenizer(), PlainFormat()
    revisions = revision_demonstrations(suite.splits.train, suite.family, fraction=0.3,
                                        num_agents=2, seed=0)[:3]
    config = RolloutConfig(num_turns=2, num_generations=1, num_agents=2, max_new_tokens=64,
                           max_context=320)
    with SandboxPool(num_workers=1) as pool:
        env = CodeEnv(CodeEnvConfig(num_agents=2, feedback_style="compact",
                                    history_mode=history_mode,
                                    templates=suite.templates("tiny")), sandbox=pool)
        pairs = revision_pairs(env, revisions)
        for i, r in enumerate(revisions):
            teacher = Teacher(tok, [(r.first.completions[a], r.revision.completions[a])
                                    for a in range(2)])
            tree = rollout([r.first.task], env, teacher, tok, config, jax.random.key(0), fmt)
            batch = jax.device_get(make_batch(tree, length=config.max_context))
            for a in range(2):
                first_turn = (env.reset(r.first.task)[1][a], r.first.completions[a])
                sft = sft_examples(tok, [first_turn, pairs[a][i]], fmt, config.max_context)
                assert pairs[a][i][1] == r.revision.completions[a]
                for row in range(2):  # rows are turn-major: turn 1, turn 2
                    mask = batch.token_mask[a, row]
                    np.testing.assert_array_equal(batch.tokens[a, row][mask],
                                                  sft.tokens[row][sft.token_mask[row]])
                    np.testing.assert_array_equal(batch.loss_mask[a, row][mask],
                                                  sft.loss_mask[row][sft.token_mask[row]])
