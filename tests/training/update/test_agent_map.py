"""map_agents: vmap and agents one after another give the same results, with shared
(None) arguments; a train step run sequentially equals the vmapped one (the cuDNN path,
agent_map.py, forced on CPU)."""

import jax
import optax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.training.update import agent_map
from mtrl.training.update.agent_map import map_agents


def test_sequential_equals_vmap_with_a_shared_argument():
    def fn(w, shared, x):
        return {"y": jnp.tanh(x @ w + shared), "s": jnp.sum(w) * shared}

    w = jax.random.normal(jax.random.key(0), (3, 4, 5))
    x = jax.random.normal(jax.random.key(1), (3, 2, 4))
    args = (w, jnp.float32(0.5), x)
    batched = map_agents(fn, (0, None, 0), *args, sequential=False)
    one_by_one = map_agents(fn, (0, None, 0), *args, sequential=True)
    assert batched["y"].shape == (3, 2, 5) and batched["s"].shape == (3,)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
                 batched, one_by_one)
    np.testing.assert_allclose(one_by_one["s"][2], float(jnp.sum(w[2]) * 0.5), rtol=1e-6)


def test_bad_in_axes_are_refused():
    with pytest.raises(ValueError, match="in_axes"):
        map_agents(lambda a: a, (1,), jnp.zeros((2, 2)), sequential=True)
    with pytest.raises(ValueError, match="in_axes"):
        map_agents(lambda a, b: a, (0,), jnp.zeros(2), jnp.zeros(2), sequential=False)


@pytest.mark.parametrize("shared", [False, True])
def test_a_sequential_train_step_equals_the_vmapped_one(monkeypatch, shared):
    from flax import nnx
    from mtrl.losses import KLPenaltyConfig, PolicyObjectiveConfig
    from mtrl.models import PRESETS, Transformer
    from mtrl.training.update import train_step as train_step_module
    from mtrl.training.update.minibatch import PolicyMinibatch
    from mtrl.training.policy.train_state import init_train_state

    config = PRESETS.get("tiny").replace(num_layers=1, hidden_size=32, intermediate_size=64,
                                         head_dim=8, num_heads=4, num_kv_heads=2)
    graphdef, p0 = nnx.split(Transformer(config, rngs=nnx.Rngs(0)))
    _, p1 = nnx.split(Transformer(config, rngs=nnx.Rngs(1)))
    n, c, length = 2, 4, 12
    token_mask = np.zeros((n, c, length), bool)
    token_mask[:, :, :9] = True
    loss_mask = token_mask.copy()
    loss_mask[:, :, :5] = False  # rows share a 5-token prompt: the tree packs it once
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 256, (n, c, length)).astype(np.int32)
    tokens[:, :, :5] = tokens[:, :1, :5]
    tokens = np.where(token_mask, tokens, 0)
    advantages = rng.normal(size=(n, c, 1)).astype(np.float32) * loss_mask
    minibatch = PolicyMinibatch(
        tokens=jnp.asarray(tokens), token_mask=jnp.asarray(token_mask),
        loss_mask=jnp.asarray(loss_mask), old_logprobs=jnp.zeros((n, c, length)) - 5.0,
        advantages=jnp.asarray(advantages),
        turn_index=jnp.asarray(np.where(loss_mask, 1, 0), jnp.int32))
    objective = PolicyObjectiveConfig(loss="ppo", aggregation="token-mean",
                                      kl=KLPenaltyConfig("k3", 0.05))
    # Plain SGD: Adam's g/√v turns float noise in a near-zero gradient into a full step.
    optimizer = optax.sgd(1e-2)
    results = {}
    for sequential in (False, True):
        monkeypatch.setattr(train_step_module, "uses_cudnn", lambda *_: sequential)
        step = train_step_module.make_train_step(graphdef, objective, optimizer,
                                                 num_agents=n, shared=shared, packing="tree")
        state = init_train_state([p0, p1] if not shared else [p0, p0], optimizer,
                                 shared=shared, keep_reference=True)
        results[sequential] = step(state, minibatch)
    (state_v, metrics_v), (state_s, metrics_s) = results[False], results[True]
    assert metrics_v.keys() == metrics_s.keys()
    for key in metrics_v:
        np.testing.assert_allclose(metrics_v[key], metrics_s[key], rtol=2e-5, atol=1e-6,
                                   err_msg=key)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
                 state_v.params, state_s.params)
    assert float(metrics_s["finite"]) == 1.0
