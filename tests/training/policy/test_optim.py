"""OptimConfig validation, the learning-rate schedule by hand, clipping, weight decay."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from mtrl.training.policy.optim import (SCHEDULES, OptimConfig, decay_mask, make_optimizer,
                                        make_schedule)


def schedule_values(config, steps):
    schedule = make_schedule(config)
    return np.array([float(schedule(s)) for s in steps])


def test_linear_warmup_whose_first_update_learns_then_constant():
    config = OptimConfig(learning_rate=0.1, warmup_steps=4, schedule="constant")
    values = schedule_values(config, [0, 1, 2, 3, 4, 5, 1000])
    np.testing.assert_allclose(values, [0.025, 0.05, 0.075, 0.1, 0.1, 0.1, 0.1], rtol=1e-6)


def test_cosine_decays_to_min_ratio_after_warmup():
    config = OptimConfig(learning_rate=1.0, warmup_steps=2, schedule="cosine", total_steps=6,
                         min_lr_ratio=0.1)
    values = schedule_values(config, [0, 1, 2, 3, 4, 6, 50])
    # After warmup: 0.1 + 0.9 * 0.5 * (1 + cos(pi * k / 4)) for k = s - 2, floored at s >= 6.
    cosine = lambda k: 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(k, 4) / 4))
    expected = [0.5, 1.0, 1.0, cosine(1), 0.55, 0.1, 0.1]
    assert cosine(1) == pytest.approx(0.868198, abs=1e-6)
    np.testing.assert_allclose(values, expected, rtol=1e-6, atol=1e-7)


def test_cosine_without_warmup_starts_at_peak():
    config = OptimConfig(learning_rate=2.0, schedule="cosine", total_steps=10)
    np.testing.assert_allclose(schedule_values(config, [0, 5, 10]), [2.0, 1.0, 0.0], atol=1e-6)


@pytest.mark.parametrize("changes, message", [
    (dict(schedule="cosine"), "needs total_steps"),
    (dict(schedule="cosine", total_steps=3, warmup_steps=3), "must exceed"),
    (dict(schedule="linear"), "constant"),
    (dict(learning_rate=0.0), "learning_rate"),
    (dict(learning_rate=float("nan")), "learning_rate"),
    (dict(warmup_steps=-1), "warmup_steps"),
    (dict(min_lr_ratio=1.5), "min_lr_ratio"),
    (dict(weight_decay=-0.1), "weight_decay"),
    (dict(b1=1.0), "b1"),
    (dict(eps=0.0), "eps"),
    (dict(max_grad_norm=0.0), "max_grad_norm"),
])
def test_config_validation(changes, message):
    with pytest.raises(ValueError, match=message):
        OptimConfig(**changes)


def test_schedule_registry_names():
    assert SCHEDULES.names() == ("constant", "cosine")


def first_moment(opt_state):
    return optax.tree_utils.tree_get(opt_state, "mu")


def test_global_norm_clipping_scales_the_gradient():
    params = {"dense": {"kernel": jnp.zeros(3)}}
    grads = {"dense": {"kernel": jnp.array([6.0, 8.0, 0.0])}}  # global norm 10
    for max_norm, scale in [(1.0, 0.1), (20.0, 1.0), (None, 1.0)]:
        optimizer = make_optimizer(OptimConfig(learning_rate=1e-3, b1=0.9, max_grad_norm=max_norm))
        _, state = optimizer.update(grads, optimizer.init(params), params)
        # Adam's first moment after one update: (1 - b1) * clipped gradient.
        np.testing.assert_allclose(first_moment(state)["dense"]["kernel"],
                                   0.1 * scale * np.array([6.0, 8.0, 0.0]), rtol=1e-6)


def test_warmup_learning_rate_reaches_the_update():
    # W = 2: update 0 uses eta/2 (a one-step run learns), update 1 eta; Adam's step for a
    # constant gradient is ~sign(g), so the weights move by -0.05 * sign(g), then -0.1.
    optimizer = make_optimizer(OptimConfig(learning_rate=0.1, warmup_steps=2, max_grad_norm=None))
    params = {"dense": {"kernel": jnp.ones(2)}}
    grads = {"dense": {"kernel": jnp.array([3.0, -0.5])}}
    state = optimizer.init(params)
    updates, state = optimizer.update(grads, state, params)
    np.testing.assert_allclose(updates["dense"]["kernel"], [-0.05, 0.05], rtol=1e-4)
    updates, state = optimizer.update(grads, state, params)
    # rtol: Adam's bias correction 1 - b2^2 loses digits to cancellation in float32.
    np.testing.assert_allclose(updates["dense"]["kernel"], [-0.1, 0.1], rtol=1e-4)


class _Block(nnx.Module):
    def __init__(self, rngs):
        self.embed = nnx.Embed(5, 4, rngs=rngs)
        self.proj = nnx.Linear(4, 4, rngs=rngs)
        self.norm = nnx.RMSNorm(4, rngs=rngs)


def test_weight_decay_applies_to_kernels_and_embeddings_only():
    _, params = nnx.split(_Block(nnx.Rngs(0)))
    mask = {jax.tree_util.keystr(path): bool(leaf)
            for path, leaf in jax.tree_util.tree_leaves_with_path(decay_mask(params))}
    assert mask == {"['embed']['embedding'].value": True, "['norm']['scale'].value": False,
                    "['proj']['bias'].value": False, "['proj']['kernel'].value": True}
    # With zero gradients AdamW's update is -eta * lambda * theta on decayed leaves only.
    optimizer = make_optimizer(OptimConfig(learning_rate=0.1, weight_decay=0.5))
    grads = jax.tree.map(jnp.zeros_like, params)
    updates, _ = optimizer.update(grads, optimizer.init(params), params)
    flat_updates = dict(jax.tree_util.tree_leaves_with_path(updates))
    for path, theta in jax.tree_util.tree_leaves_with_path(params):
        expected = -0.05 * np.asarray(theta) if mask[jax.tree_util.keystr(path)] else 0.0
        np.testing.assert_allclose(flat_updates[path], expected, rtol=1e-6, atol=1e-8)


def test_weight_decay_applies_to_lora_factors():
    """LoRA's A and B are matrices: decay pulls the adapted policy towards its base."""
    from mtrl.models.lora import LoRAConfig, LoRAParam
    from mtrl.models.lora_linear import LoRALinear
    layer = LoRALinear(4, 3, lora=LoRAConfig(rank=2), rngs=nnx.Rngs(0))
    _, adapters, _ = nnx.split(layer, LoRAParam, ...)
    mask = {jax.tree_util.keystr(path): bool(leaf)
            for path, leaf in jax.tree_util.tree_leaves_with_path(decay_mask(adapters))}
    assert mask == {"['lora_a'].value": True, "['lora_b'].value": True}
