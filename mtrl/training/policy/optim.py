"""Optimizer of the train steps: global-norm clipping, then AdamW on a warmup schedule.

    g      ← g · min(1, c / ‖g‖₂)          ‖g‖₂ the global norm over every leaf (c = max_grad_norm)
    θ      ← θ − η_s · (Adam(g) + λ·θ)     AdamW: decoupled weight decay λ on matrices only

Adam: Kingma & Ba 2015; decoupled weight decay: Loshchilov & Hutter 2019 ("AdamW"),
applied, as is usual for transformers, to kernels and embedding tables only (not to
norm gains or biases). Clipping: Pascanu et al. 2013.

Learning rate η_s at the 0-based update count s (optax's convention), with
W = warmup_steps and η = learning_rate. The warmup's W updates climb linearly to the
peak, the first already learning: with η_0 = 0 (warmup from 0) a one-step run
exported its starting weights unchanged.

    s < W:     η_s = η · (s + 1) / W                             (linear warmup, η/W first)
    s ≥ W:     η_s = η · decay(s − W)
      constant: decay = 1
      cosine:   decay = m + (1 − m) · ½ (1 + cos(π · min(1, (s − W) / (T − W))))
                with m = min_lr_ratio, T = total_steps; η_s = m·η from s = T on.

The decay shapes are registered by name in SCHEDULES.

dtype policy (mixed precision; Micikevicius et al. 2018): the optimizer works in
float32. Parameters stored in float32 (presets: `param_dtype` float32, whatever the
compute `dtype`) are their own master copy, and AdamW's moments are float32 like them.
Parameters stored below float32 (a bf16 checkpoint) get a float32 master copy in the
optimizer state (`float32_master`): gradients are upcast, clipping and AdamW run on the
master and its float32 moments, and the stored weights become the master rounded to
their dtype. Without it an update smaller than half a bf16 ulp of a weight (|Δθ| <
|θ|·2⁻⁹, e.g. η = 1e-6 on weights of order 1e-2) would be rounded away on every step.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax

from mtrl.config.fields import check_choice, check_int, check_number
from mtrl.registry import Registry

# decay(steps since warmup ended, config) -> multiplier of the peak learning rate.
DecayFn = Callable[[jax.Array, "OptimConfig"], jax.Array]
SCHEDULES: Registry[DecayFn] = Registry("learning-rate schedule")

# Parameter leaves that weight decay applies to (matrices); norm gains and biases are not
# decayed, since pulling them towards 0 changes what the layer computes, not its capacity.
# LoRA's factors are matrices too: decaying them pulls the policy towards its base.
DECAYED_LEAF_NAMES = ("kernel", "embedding", "lora_a", "lora_b")


@SCHEDULES.register("constant")
def constant_decay(steps_after_warmup: jax.Array, config: "OptimConfig") -> jax.Array:
    """decay = 1."""
    del config
    return jnp.ones_like(steps_after_warmup, jnp.float32)


@SCHEDULES.register("cosine")
def cosine_decay(steps_after_warmup: jax.Array, config: "OptimConfig") -> jax.Array:
    """decay = m + (1 − m)·½(1 + cos(π·min(1, k / (T − W)))), k = steps after warmup
    (Loshchilov & Hutter 2017, "SGDR", without restarts)."""
    span = float(config.total_steps - config.warmup_steps)
    progress = jnp.clip(steps_after_warmup / span, 0.0, 1.0)
    m = config.min_lr_ratio
    return m + (1.0 - m) * 0.5 * (1.0 + jnp.cos(jnp.pi * progress))


@dataclasses.dataclass(frozen=True)
class OptimConfig:
    """AdamW with warmup, a named decay schedule and optional global-norm clipping.

    learning_rate: peak η (> 0).
    warmup_steps: W ≥ 0 updates of linear warmup from 0 (0: none).
    schedule: a name in SCHEDULES ('constant' | 'cosine').
    total_steps: T, the update at which cosine reaches m·η (required for 'cosine', > W).
    min_lr_ratio: m in [0, 1], the cosine floor as a fraction of η.
    weight_decay: λ ≥ 0, decoupled, on kernels and embeddings only.
    b1, b2: Adam's moment decays in [0, 1). eps: Adam's ε > 0 (added to √v̂, outside the root).
    max_grad_norm: c > 0 for global-norm clipping, None for none.
    """

    learning_rate: float = 1e-4
    warmup_steps: int = 0
    schedule: str = "constant"
    total_steps: int | None = None
    min_lr_ratio: float = 0.0
    weight_decay: float = 0.0
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    max_grad_norm: float | None = 1.0

    def __post_init__(self):
        for name in ("learning_rate", "eps"):
            check_number(f"OptimConfig.{name}", getattr(self, name), above=0, finite=True)
        check_int("OptimConfig.warmup_steps", self.warmup_steps, 0)
        check_choice("OptimConfig.schedule", self.schedule, SCHEDULES)
        check_int("OptimConfig.total_steps", self.total_steps, 1, optional=True)
        if self.schedule == "cosine":
            if self.total_steps is None:
                raise ValueError("OptimConfig.schedule 'cosine' needs total_steps")
            if self.total_steps <= self.warmup_steps:
                raise ValueError(f"OptimConfig.total_steps ({self.total_steps}) must exceed "
                                 f"warmup_steps ({self.warmup_steps}) for 'cosine'")
        if not 0.0 <= self.min_lr_ratio <= 1.0:
            raise ValueError(f"OptimConfig.min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")
        if not (math.isfinite(self.weight_decay) and self.weight_decay >= 0.0):
            raise ValueError(f"OptimConfig.weight_decay must be finite and >= 0, "
                             f"got {self.weight_decay}")
        for name in ("b1", "b2"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"OptimConfig.{name} must be in [0, 1), got {getattr(self, name)}")
        if self.max_grad_norm is not None:
            check_number("OptimConfig.max_grad_norm", self.max_grad_norm, above=0, finite=True)


def make_schedule(config: OptimConfig) -> optax.Schedule:
    """η_s as a jittable function of the 0-based update count s (module docstring)."""
    peak, warmup = float(config.learning_rate), config.warmup_steps
    decay = SCHEDULES.get(config.schedule)

    def schedule(count: Any) -> jax.Array:
        s = jnp.asarray(count, jnp.float32)
        after = peak * decay(jnp.maximum(s - warmup, 0.0), config)
        if warmup == 0:
            return after
        return jnp.where(s < warmup, peak * (s + 1.0) / warmup, after)

    return schedule


def decay_mask(params: Any) -> Any:
    """Pytree of bools shaped like `params`: True at leaves whose name is in
    DECAYED_LEAF_NAMES (the last dict key on the leaf's path)."""

    def is_decayed(path, _leaf) -> bool:
        names = [key.key for key in path if isinstance(key, jax.tree_util.DictKey)]
        return bool(names) and names[-1] in DECAYED_LEAF_NAMES

    return jax.tree_util.tree_map_with_path(is_decayed, params)


class Float32MasterState(NamedTuple):
    """float32_master's state when some parameter is stored below float32."""

    master: Any  # float32 copy of every parameter leaf (the values the optimizer updates)
    inner: optax.OptState  # the wrapped optimizer's state, built on `master` (float32)


def _below_float32(params: Any) -> bool:
    return any(jnp.issubdtype(x.dtype, jnp.floating) and jnp.finfo(x.dtype).bits < 32
               for x in jax.tree.leaves(params))


def float32_master(inner: optax.GradientTransformation) -> optax.GradientTransformation:
    """Run `inner` in float32 whatever the parameters' storage dtype (module docstring).

    All-float32 parameters: `inner` unchanged (same state, same updates, bit for bit).
    Otherwise the state is Float32MasterState and, with m the master and u = inner's
    update of the float32 gradient,

        m ← m + u,    updates = m − float32(θ)    (so optax.apply_updates gives θ ≈ m)

    The returned updates are float32: apply_updates adds them to θ in float32 and rounds
    once to θ's dtype, so the stored weights are the master rounded (up to one rounding
    of m − θ). The master, not θ, carries the small steps from one update to the next.
    """

    def init(params):
        if not _below_float32(params):
            return inner.init(params)
        master = jax.tree.map(lambda x: x.astype(jnp.float32), params)
        return Float32MasterState(master=master, inner=inner.init(master))

    def update(grads, state, params=None):
        if not isinstance(state, Float32MasterState):
            return inner.update(grads, state, params)
        if params is None:
            raise ValueError("float32_master: update() needs params when they are stored "
                             "below float32")
        grads32 = jax.tree.map(lambda g: g.astype(jnp.float32), grads)
        steps, inner_state = inner.update(grads32, state.inner, state.master)
        master = optax.apply_updates(state.master, steps)
        updates = jax.tree.map(lambda m, p: m - p.astype(jnp.float32), master, params)
        return updates, Float32MasterState(master=master, inner=inner_state)

    return optax.GradientTransformation(init, update)


def make_optimizer(config: OptimConfig) -> optax.GradientTransformation:
    """float32_master(optax.chain(clip_by_global_norm(c), adamw(η_s, b1, b2, eps, λ,
    mask=decay_mask))), without the clip when max_grad_norm is None. The master copy
    exists only for parameters stored below float32 (module docstring, dtype policy)."""
    adamw = optax.adamw(make_schedule(config), b1=config.b1, b2=config.b2, eps=config.eps,
                        weight_decay=config.weight_decay, mask=decay_mask)
    if config.max_grad_norm is None:
        return float32_master(adamw)
    return float32_master(optax.chain(optax.clip_by_global_norm(config.max_grad_norm), adamw))
