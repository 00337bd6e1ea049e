"""Three training steps on a tiny transformer for every credit estimator: the
advantages of each method reach a compiled train step and keep it finite. One
compiled step serves all estimators (the tree, hence every shape, is shared)."""

import dataclasses

import jax
import numpy as np
import pytest
from flax import nnx

from mtrl.losses import PolicyObjectiveConfig
from mtrl.models import PRESETS, Transformer
from mtrl.rollout import RolloutConfig, StepRollout, make_batch, rollout
from mtrl.training.advantages.estimators import CREDIT_ESTIMATORS, CreditConfig, token_advantages
from mtrl.training.update.minibatch import policy_minibatch
from mtrl.training.policy.optim import OptimConfig, make_optimizer
from mtrl.training.update.ppo_epochs import ppo_update
from mtrl.training.update.step_metrics import check_finite
from mtrl.training.policy.train_state import agent_params, init_train_state
from mtrl.training.update.train_step import make_train_step
from tests.rollout.scripted import CharTokenizer, ScriptedBackend
from tests.training.signal_env import SignalEnv

MODEL = dataclasses.replace(PRESETS.get("tiny"), num_layers=1, hidden_size=32,
                            intermediate_size=64, head_dim=8, num_heads=4, num_kv_heads=2)
OBJECTIVE = PolicyObjectiveConfig(loss="reinforce", aggregation="seq-mean-token-sum")


@pytest.fixture(scope="module")
def setup():
    config = RolloutConfig(num_turns=2, num_generations=2, num_agents=2, joint_mode="align",
                           termination_threshold=0.5, max_new_tokens=32, max_context=4096)
    tree = rollout([0, 1], SignalEnv(2), ScriptedBackend(), CharTokenizer(), config,
                   jax.random.key(0))
    batch = make_batch(tree)
    graphdef, params = nnx.split(Transformer(MODEL, rngs=nnx.Rngs(0)))
    optimizer = make_optimizer(OptimConfig(learning_rate=1e-2, warmup_steps=0))
    step = make_train_step(graphdef, OBJECTIVE, optimizer, num_agents=2, shared=False)
    return tree, batch, params, optimizer, step


@pytest.mark.parametrize("name", CREDIT_ESTIMATORS.names())
def test_three_steps_per_estimator(setup, name):
    tree, batch, params, optimizer, step = setup
    advantages = token_advantages(CreditConfig(estimator=name), StepRollout(tree, batch), 1.0)
    assert np.abs(np.asarray(advantages)).sum() > 0
    copies = [jax.tree.map(lambda x: x.copy(), params) for _ in range(2)]
    state = init_train_state(copies, optimizer, shared=False, keep_reference=False)
    before = jax.tree.map(np.asarray, agent_params(state, 0))
    state, metrics = ppo_update(step, state, policy_minibatch(batch, advantages),
                                epochs=3, minibatches=1, key=jax.random.key(1))
    assert len(metrics) == 3
    check_finite(metrics)
    after = agent_params(state, 0)
    assert any(not np.allclose(b, np.asarray(a)) for b, a in
               zip(jax.tree.leaves(before), jax.tree.leaves(after)))
    assert step.num_compiles == 1
