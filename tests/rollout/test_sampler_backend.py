"""Tree rollouts with the real model and sampler: KV reuse equals re-encoding, and
the recorded log-probabilities equal a full forward over the stored tokens."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.models import PRESETS, Transformer
from mtrl.rollout import RolloutConfig, make_batch, rollout
from mtrl.rollout.sampler_backend import NaiveBackend, SamplerBackend
from mtrl.sampling import SamplingConfig
from mtrl.sampling.sampler import Sampler
from mtrl.tokenizers import ByteTokenizer
from tests.rollout.scripted import ScriptedEnv

TOKENIZER = ByteTokenizer()


@pytest.fixture(scope="module")
def agents():
    config = dataclasses.replace(PRESETS.get("tiny"), num_layers=2, hidden_size=64,
                                 intermediate_size=128, head_dim=16)
    models = [Transformer(config, rngs=nnx.Rngs(seed)) for seed in (1, 2)]
    graphdef = nnx.split(models[0])[0]
    # One Sampler for every test: its compiled programs are reused across tests.
    return Sampler(models[0]), graphdef, [nnx.split(m)[1] for m in models]


def _config(mode, greedy=True):
    rollout_config = RolloutConfig(num_turns=2, num_generations=2, num_agents=2,
                                   joint_mode=mode, max_new_tokens=8, max_context=128)
    sampling = SamplingConfig(max_new_tokens=8, greedy=greedy,
                              stop_token_ids=(TOKENIZER.eos_id,), pad_id=TOKENIZER.pad_id)
    return rollout_config, sampling


@pytest.mark.parametrize("mode", ["align", "cross"])
def test_kv_reuse_equals_fresh_prefill(agents, mode):
    sampler, _, states = agents
    rollout_config, sampling = _config(mode)
    trees = []
    for backend_cls in (SamplerBackend, NaiveBackend):
        backend = backend_cls(sampler, states, sampling)
        trees.append(rollout([0, 1, 2], ScriptedEnv(2), backend, TOKENIZER, rollout_config,
                             jax.random.key(0)))
    reuse, naive = trees
    assert len(reuse.turns) == len(naive.turns) == 2
    for a_turn, b_turn in zip(reuse.turns, naive.turns):
        for a in range(2):
            assert a_turn.contexts[a] == b_turn.contexts[a]
            assert a_turn.completions[a] == b_turn.completions[a]
            for x, y in zip(a_turn.logprobs[a], b_turn.logprobs[a]):
                np.testing.assert_allclose(x, y, atol=1e-5)


def test_recorded_logprobs_equal_full_forward(agents):
    sampler, graphdef, states = agents
    rollout_config, sampling = _config("cross", greedy=False)
    backend = SamplerBackend(sampler, states, sampling)
    tree = rollout([0, 1], ScriptedEnv(2), backend, TOKENIZER, rollout_config,
                   jax.random.key(3))
    batch = make_batch(tree)
    assert batch.tokens.shape[0] == 2
    checked = 0
    for a in range(2):
        model = nnx.merge(graphdef, states[a])
        logits = model(batch.tokens[a], token_mask=batch.token_mask[a])
        logp = jax.nn.log_softmax(logits, axis=-1)
        # log π(tokens[i] | tokens[:i]) is read at position i-1.
        recomputed = jnp.take_along_axis(logp[:, :-1], batch.tokens[a][:, 1:, None], -1)[..., 0]
        mask = np.asarray(batch.loss_mask[a][:, 1:])
        assert not np.asarray(batch.loss_mask[a][:, 0]).any()
        np.testing.assert_allclose(np.asarray(recomputed)[mask],
                                   np.asarray(batch.old_logprobs[a][:, 1:])[mask], atol=1e-5)
        checked += mask.sum()
    assert checked > 50


def test_separate_agents_use_their_own_parameters(agents):
    """Agent 1 run with agent 0's weights must differ from agent 1's own samples."""
    sampler, _, states = agents
    rollout_config, sampling = _config("align")
    own = rollout([0], ScriptedEnv(2), SamplerBackend(sampler, states, sampling),
                  TOKENIZER, rollout_config, jax.random.key(0))
    same = rollout([0], ScriptedEnv(2), SamplerBackend(sampler, states[:1],
                                                         sampling),
                   TOKENIZER, rollout_config, jax.random.key(0))
    np.testing.assert_array_equal(own.turns[0].logprobs[0][0], same.turns[0].logprobs[0][0])
    assert not np.allclose(own.turns[0].logprobs[1][0], same.turns[0].logprobs[1][0])
