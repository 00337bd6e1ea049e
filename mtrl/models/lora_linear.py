"""LoRALinear: a projection with a frozen base and trained low-rank factors (the
formula and initialisation: mtrl/models/lora.py's docstring)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from mtrl.models.dense import Dense
from mtrl.models.lora import LoRAConfig, LoRAParam


class LoRALinear(Dense):
    """Dense (nnx.Linear) plus a low-rank update: y = x·W + b + s·(x·A)·B (module docstring).

    Same kernel and bias paths as nnx.Linear; the base product runs where `matmul` says
    (dense.py), the adapters' in the compute dtype. Same paths (checkpoints and sharding rules see the
    base projection), plus `lora_a` [in, r] and `lora_b` [r, out] (float32 LoRAParams).
    """

    def __init__(self, in_features: int, out_features: int, *, lora: LoRAConfig,
                 rngs: nnx.Rngs, **linear_kwargs):
        if not lora.enabled:
            raise ValueError("LoRALinear needs a LoRAConfig with rank >= 1")
        super().__init__(in_features, out_features, rngs=rngs, **linear_kwargs)
        bound = 1.0 / math.sqrt(in_features)
        self.lora_a = LoRAParam(jax.random.uniform(
            rngs.params(), (in_features, lora.rank), jnp.float32, -bound, bound))
        self.lora_b = LoRAParam(jnp.zeros((lora.rank, out_features), jnp.float32))
        self.lora_scale = lora.scale

    def __call__(self, x: jax.Array) -> jax.Array:
        y = super().__call__(x)
        a = self.lora_a[...].astype(y.dtype)
        b = self.lora_b[...].astype(y.dtype)
        return y + self.lora_scale * ((x.astype(y.dtype) @ a) @ b)
