"""The feedback probe with the real model and sampler: its observed branch, a fresh
prefill of the rebuilt history, is the turn the rollout played (same tokens, so the
same success), so the gain compares like with like."""

import dataclasses

import jax
import numpy as np
from flax import nnx

from mtrl.models import PRESETS, Transformer
from mtrl.rollout import RolloutConfig, rollout
from mtrl.rollout.generator import per_agent_formats
from mtrl.rollout.sampler_backend import SamplerBackend
from mtrl.sampling import SamplingConfig
from mtrl.sampling.sampler import Sampler
from mtrl.tokenizers import ByteTokenizer
from mtrl.training.evaluate.feedback_probe import StepRecorder, probe_feedback
from tests.rollout.scripted import ScriptedEnv, digest

TOKENIZER = ByteTokenizer()


def test_the_observed_branch_replays_the_rollouts_next_turn():
    # A wide initialisation: a small random model's greedy text then depends on its
    # context (at 0.02 it writes the same newlines after every prompt).
    config = dataclasses.replace(PRESETS.get("tiny"), num_layers=2, hidden_size=64,
                                 intermediate_size=128, head_dim=16, initializer_range=0.5)
    models = [Transformer(config, rngs=nnx.Rngs(seed)) for seed in (1, 2)]
    sampling = SamplingConfig(max_new_tokens=8, greedy=True,
                              stop_token_ids=(TOKENIZER.eos_id,), pad_id=TOKENIZER.pad_id)
    backend = SamplerBackend(Sampler(models[0]), [nnx.split(m)[1] for m in models], sampling)
    chain = RolloutConfig(num_turns=3, num_generations=1, num_agents=2, max_new_tokens=8,
                          max_context=128, termination_threshold=None)
    # Solved when the joint answer hashes to 0 mod 3: some tasks at some turns.
    env = StepRecorder(ScriptedEnv(2, reward_fn=lambda a, t: float(digest(a) % 3 == 0)))
    tree = rollout(list(range(8)), env, backend, TOKENIZER, chain, jax.random.key(0))
    observed, retry, counted = probe_feedback(tree, env, backend, TOKENIZER, chain,
                                              jax.random.key(0), per_agent_formats(None, 2))
    # Every failure at turns 1 and 2 is counted (no episode ends early here).
    for t in (1, 2):
        np.testing.assert_array_equal(counted[tree.turns[t - 1].node_index, t - 1],
                                      ~tree.turns[t - 1].done[:, 0])
    assert counted[:, 0].any() and counted[:, 1].any()
    for t in (1, 2):
        done = np.zeros(8, bool)
        done[tree.turns[t].node_index] = tree.turns[t].done[:, 0]
        rows = counted[:, t - 1]
        np.testing.assert_array_equal(observed[rows, t - 1], done[rows])
    assert not (retry & ~counted).any() and not (observed & ~counted).any()
    assert (observed != retry).any()  # the observation's text moved some answer
