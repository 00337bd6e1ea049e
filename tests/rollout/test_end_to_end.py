"""End to end: tiny model + sampler + code environment (real sandbox) -> tree rollout ->
rollout batch -> finite per-token advantages for both agents."""

import dataclasses

import jax
import numpy as np
import pytest
from flax import nnx

from mtrl.envs.code import CodeEnv, CodeEnvConfig
from mtrl.envs.code.task import CodeTask
from mtrl.envs.sandbox import SandboxPool
from mtrl.models import PRESETS, Transformer
from mtrl.rollout import RolloutConfig, StepRollout, make_batch, rollout
from mtrl.training.advantages.estimators import CreditConfig, token_advantages
from mtrl.rollout.sampler_backend import SamplerBackend
from mtrl.sampling import SamplingConfig
from mtrl.sampling.sampler import Sampler
from mtrl.tokenizers import ByteTokenizer

TASKS = [
    CodeTask(task_id="t0", prompt="Write f(x) returning x plus one.", entry_point="f",
             tests=("assert f(1) == 2", "assert f(5) == 6")),
    CodeTask(task_id="t1", prompt="Write g(s) returning s reversed.", entry_point="g",
             tests=("assert g('ab') == 'ba'", "assert g('') == ''")),
]


@pytest.fixture(scope="module")
def setup():
    tokenizer = ByteTokenizer()
    config = dataclasses.replace(PRESETS.get("tiny"), num_layers=2, hidden_size=64,
                                 intermediate_size=128, head_dim=16)
    models = [Transformer(config, rngs=nnx.Rngs(seed)) for seed in (0, 1)]
    sampler = Sampler(models[0])
    pool = SandboxPool(num_workers=2)
    yield tokenizer, sampler, [nnx.split(m)[1] for m in models], pool
    pool.close()


@pytest.mark.parametrize("mode", ["align", "cross"])
def test_code_tree_rollout_gives_finite_advantages(setup, mode):
    tokenizer, sampler, states, pool = setup
    rollout_config = RolloutConfig(num_turns=2, num_generations=2, num_agents=2,
                                   joint_mode=mode, max_new_tokens=24, max_context=1024)
    sampling = SamplingConfig(max_new_tokens=24, temperature=1.0,
                              stop_token_ids=(tokenizer.eos_id,), pad_id=tokenizer.pad_id)
    env = CodeEnv(CodeEnvConfig(num_agents=2, feedback_mode="level_feedback",
                                sandbox_slice=1), sandbox=pool)
    tree = rollout(TASKS, env, SamplerBackend(sampler, states, sampling), tokenizer,
                   rollout_config, jax.random.key(7))
    j = 2 if mode == "align" else 4
    assert [len(r.node_index) for r in tree.turns] == [2, 2 * j]
    # level_feedback diagnostics follow each agent's own first completion in its history.
    second = tree.turns[1]
    for a in range(2):
        for m, context in enumerate(second.contexts[a]):
            history = tokenizer.decode(context)
            assert history.count("Diagnostics of the previous attempt") == 1
            assert "Tests:" in history
            assert "f(5) == 6" not in history and "g('') == ''" not in history  # slice=1
            parent = m // j  # node m of turn 2 is child j of turn-1 node m // J
            own = tree.turns[0].texts[a][parent * 2 + int(tree.joint_index[m % j, a])]
            assert own in history
    assert set(tree.turns[0].components) >= {"pass_rate"}
    batch = make_batch(tree)
    adv = np.asarray(token_advantages(CreditConfig(), StepRollout(tree, batch), 0.9))
    assert adv.shape == batch.tokens.shape
    assert np.isfinite(adv).all()
    assert np.asarray(batch.loss_mask).any()
    assert not adv[~np.asarray(batch.loss_mask)].any()
