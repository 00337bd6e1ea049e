"""Dense: nnx.Linear (same parameters, same checkpoints) whose product runs where
ModelConfig.matmul says: XLA's dot, or oneDNN on the CPU's bf16 units
(mtrl.models.matmul). Its own file so that layers.py and lora_linear.py both build on
it without an import circle through config.py."""

from __future__ import annotations

import jax
from flax import nnx

from mtrl.models.matmul import dense, resolve_matmul


class Dense(nnx.Linear):
    """nnx.Linear whose product runs on XLA or oneDNN (`matmul`: auto | xla | onednn)."""

    def __init__(self, *args, matmul: str = "xla", **kwargs):
        super().__init__(*args, **kwargs)
        self.matmul = matmul

    def __call__(self, x: jax.Array) -> jax.Array:
        if resolve_matmul(self.matmul, self.dtype) == "xla":
            # As one [tokens, in] matrix: XLA's CPU backward of a dot over [B, L, in]
            # transposes its gradients through a slow strided copy (1.7x a 2-D MLP's).
            lead = x.shape[:-1]
            return super().__call__(x.reshape(-1, x.shape[-1])).reshape(*lead, -1)
        bias = None if self.bias is None else self.bias[...]
        return dense(x, self.kernel[...], bias, self.dtype)
