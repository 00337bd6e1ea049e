"""Environment work overlapped with generation (rollout.env_groups).

Three checks: grouped generation grows the same tree as one batched call when the
policy's completions depend on the history only (scripted); a group's joint actions are
submitted to the environment before the next group generates (the overlap); and with
the real sampler and the real sandbox, the overlapped path gives exactly the rollout
batch of a synchronous environment for the same seed and groups."""

import concurrent.futures
import dataclasses

import jax
import numpy as np
import pytest
from flax import nnx

from mtrl.envs.code import CodeEnv, CodeEnvConfig
from mtrl.envs.sandbox import SandboxPool
from mtrl.models import PRESETS, Transformer
from mtrl.rollout import RolloutConfig, make_batch, rollout
from mtrl.rollout.sampler_backend import SamplerBackend
from mtrl.sampling import SamplingConfig
from mtrl.sampling.sampler import Sampler
from mtrl.tokenizers import ByteTokenizer

from tests.rollout.scripted import CharTokenizer, ScriptedBackend, ScriptedEnv
from tests.rollout.test_end_to_end import TASKS

TOK = CharTokenizer()


def _config(**kw):
    base = dict(num_turns=3, num_generations=2, num_agents=2, joint_mode="align",
                termination_threshold=0.5, max_new_tokens=32, max_context=4096)
    return RolloutConfig(**{**base, **kw})


class RecordingEnv(ScriptedEnv):
    """Logs when joint actions are submitted, in the order the generator does things."""

    def __init__(self, num_agents, log):
        super().__init__(num_agents)
        self.log = log

    def step_async(self, states, actions, turn):
        self.log.append(("submit", turn, len(states)))
        return super().step_async(states, actions, turn)


class LoggingBackend(ScriptedBackend):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def generate(self, agent, contexts, num_samples, max_new_tokens, key):
        self.log.append(("generate", agent, len(contexts.tokens)))
        return super().generate(agent, contexts, num_samples, max_new_tokens, key)


def _same_tree(a, b):
    assert len(a.turns) == len(b.turns)
    for x, y in zip(a.turns, b.turns):
        np.testing.assert_array_equal(x.node_index, y.node_index)
        np.testing.assert_array_equal(x.rewards, y.rewards)
        np.testing.assert_array_equal(x.expanded, y.expanded)
        np.testing.assert_array_equal(x.truncated, y.truncated)
        assert x.contexts == y.contexts and x.completions == y.completions
        assert x.observations == y.observations
        for la, lb in zip(x.logprobs, y.logprobs):
            for u, v in zip(la, lb):
                np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("mode", ["align", "cross"])
@pytest.mark.parametrize("groups", [2, 3, 5])
def test_groups_grow_the_same_tree(mode, groups):
    tasks = [0, 1, 2, 3, 4]
    one = rollout(tasks, ScriptedEnv(2), ScriptedBackend(), TOK, _config(joint_mode=mode),
                  jax.random.key(0))
    many = rollout(tasks, ScriptedEnv(2), ScriptedBackend(), TOK,
                   _config(joint_mode=mode, env_groups=groups), jax.random.key(0))
    assert len(one.turns) >= 2 and one.turns[1].expanded.any() != one.turns[1].expanded.all()
    _same_tree(one, many)
    assert many.metrics["rollout/env_groups"] == groups


def test_a_group_is_scored_while_the_next_one_generates():
    log = []
    rollout([0, 1, 2, 3], RecordingEnv(2, log), LoggingBackend(log), TOK,
            _config(num_turns=1, env_groups=2), jax.random.key(0))
    # Group 0 (2 tasks): both agents generate, its 2·J joint actions are submitted, and
    # only then does group 1 generate.
    assert log == [("generate", 0, 2), ("generate", 1, 2), ("submit", 1, 4),
                   ("generate", 0, 2), ("generate", 1, 2), ("submit", 1, 4)]


def test_one_group_steps_synchronously():
    log = []
    rollout([0, 1], RecordingEnv(2, log), LoggingBackend(log), TOK, _config(num_turns=1),
            jax.random.key(0))
    assert not any(event[0] == "submit" for event in log)


class SynchronousCodeEnv(CodeEnv):
    """step_async that scores before returning: the synchronous reference."""

    def step_async(self, states, actions, turn):
        future = concurrent.futures.Future()
        future.set_result(self.step(states, actions, turn))
        return future


def test_overlap_gives_the_synchronous_batch():
    tokenizer = ByteTokenizer()
    model_config = dataclasses.replace(PRESETS.get("tiny"), num_layers=1, hidden_size=64,
                                       intermediate_size=128, head_dim=16)
    states = [nnx.split(Transformer(model_config, rngs=nnx.Rngs(s)))[1] for s in (0, 1)]
    sampler = Sampler(Transformer(model_config, rngs=nnx.Rngs(0)))
    sampling = SamplingConfig(max_new_tokens=16, temperature=1.0,
                              stop_token_ids=(tokenizer.eos_id,), pad_id=tokenizer.pad_id)
    config = RolloutConfig(num_turns=2, num_generations=2, num_agents=2, max_new_tokens=16,
                           max_context=512, env_groups=2)
    env_config = CodeEnvConfig(num_agents=2, feedback_mode="level_feedback")
    with SandboxPool(num_workers=2) as pool:
        batches = []
        for env in (CodeEnv(env_config, sandbox=pool),
                    SynchronousCodeEnv(env_config, sandbox=pool)):
            tree = rollout(TASKS * 2, env, SamplerBackend(sampler, states, sampling),
                           tokenizer, config, jax.random.key(3))
            batches.append(make_batch(tree, length=512))
    for x, y in zip(jax.tree.leaves(batches[0]), jax.tree.leaves(batches[1])):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    assert len(jax.tree.leaves(batches[0])) > 10


def test_env_groups_must_be_positive():
    with pytest.raises(ValueError, match="RolloutConfig.env_groups must be >= 1"):
        _config(env_groups=0)
