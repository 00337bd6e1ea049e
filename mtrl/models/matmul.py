"""Where the model's large matmuls run: XLA's dot, or oneDNN on the CPU's bf16 units.

ModelConfig.matmul picks it for the projections (q/k/v/o, gate/up/down) and the
output layer, when traced:

  "xla"     jax's dot_general (what nnx.Linear does), everywhere.
  "onednn"  mtrl.kernels.onednn_matmul: bf16 inputs, float32 accumulation and
            output, a custom_vjp whose backward is two more oneDNN products
            (dx = g @ W^T, dW = x^T @ g, g cast to bf16). Needs a bfloat16 compute
            dtype and the built kernel on a CPU backend; fails in one line otherwise.
  "auto"    "onednn" when the backend is the CPU with one device (GSPMD cannot
            partition the custom call), the compute dtype bfloat16, the CPU has
            AMX-BF16 tiles (/proc/cpuinfo amx_bf16, amx_tile) and the kernel is built;
            "xla" otherwise. The choice is printed once per process.

Weights stay float32 masters (or whatever param_dtype is); they are cast to bf16 for
the product only. Results are float32 and cast to the compute dtype by the caller
(the logits stay float32). Tolerances against XLA are tests/models/test_matmul.py's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from mtrl.kernels import cpu, onednn_matmul
from mtrl.models.config import MATMULS
_PRINTED: set[str] = set()


def auto_choice(compute_dtype) -> tuple[str, str]:
    """("onednn" | "xla", why) for matmul="auto" on this process's backend and CPU."""
    if jax.default_backend() != "cpu":
        return "xla", f"backend {jax.default_backend()}"
    if jnp.dtype(compute_dtype) != jnp.bfloat16:
        return "xla", f"compute dtype {jnp.dtype(compute_dtype).name}"
    if jax.device_count() > 1:  # GSPMD cannot partition the custom call
        return "xla", f"{jax.device_count()} devices"
    if not cpu.has_amx_bf16():
        return "xla", "this CPU has no AMX-BF16 units"
    reason = onednn_matmul.load()
    if reason is not None:
        return "xla", reason
    return "onednn", "AMX-BF16 units found, oneDNN kernel loaded"


def resolve_matmul(choice: str, compute_dtype) -> str:
    """The implementation `choice` runs as ("xla" | "onednn"); prints auto's choice once."""
    if choice not in MATMULS:
        raise ValueError(f"matmul must be one of {MATMULS}, got {choice!r}")
    if choice == "xla":
        return "xla"
    if choice == "onednn":
        if jnp.dtype(compute_dtype) != jnp.bfloat16:
            raise ValueError(f"matmul='onednn' needs compute dtype bfloat16, got "
                             f"{jnp.dtype(compute_dtype).name}")
        reason = onednn_matmul.unusable_reason()  # not built, or this CPU lacks bf16
        if reason is not None:
            raise RuntimeError(f"matmul='onednn' unavailable: {reason}")
        return "onednn"
    resolved, why = auto_choice(compute_dtype)
    message = f"mtrl: matmul auto -> {resolved} ({why})"
    if message not in _PRINTED and jnp.dtype(compute_dtype) == jnp.bfloat16:
        _PRINTED.add(message)
        print(message, flush=True)
    return resolved


@jax.custom_vjp
def bf16_matmul(x: jax.Array, w: jax.Array) -> jax.Array:
    """float32 x [..., K] @ w [K, N] on oneDNN (bf16 products, float32 sums)."""
    if w.ndim != 2 or x.shape[-1] != w.shape[0]:
        raise ValueError(f"bf16_matmul needs x [..., K] and w [K, N], got {x.shape}, {w.shape}")
    out = onednn_matmul.matmul(x.reshape(-1, x.shape[-1]), w)
    return out.reshape(*x.shape[:-1], w.shape[1])


def _forward(x, w):
    x16, w16 = x.astype(jnp.bfloat16), w.astype(jnp.bfloat16)
    # Zero-size arrays carry the primal dtypes (residuals must be arrays).
    return bf16_matmul(x, w), (x16, w16, jnp.zeros(0, x.dtype), jnp.zeros(0, w.dtype))


def _backward(residuals, g):
    x16, w16, x_like, w_like = residuals
    g2 = g.reshape(-1, g.shape[-1])
    x2 = x16.reshape(-1, x16.shape[-1])
    dx = onednn_matmul.matmul(g2, w16, transpose_b=True).reshape(x16.shape)
    dw = onednn_matmul.matmul(x2, g2, transpose_a=True)
    return dx.astype(x_like.dtype), dw.astype(w_like.dtype)


bf16_matmul.defvjp(_forward, _backward)


def bf16_matmul_transposed(x: jax.Array, table: jax.Array) -> jax.Array:
    """float32 x [..., K] @ table[N, K]^T (a tied embedding as the output layer)."""
    return _transposed(x, table)


@jax.custom_vjp
def _transposed(x, table):
    if table.ndim != 2 or x.shape[-1] != table.shape[1]:
        raise ValueError(f"need x [..., K] and table [N, K], got {x.shape}, {table.shape}")
    out = onednn_matmul.matmul(x.reshape(-1, x.shape[-1]), table, transpose_b=True)
    return out.reshape(*x.shape[:-1], table.shape[0])


def _transposed_forward(x, table):
    x16, t16 = x.astype(jnp.bfloat16), table.astype(jnp.bfloat16)
    return _transposed(x, table), (x16, t16, jnp.zeros(0, x.dtype), jnp.zeros(0, table.dtype))


def _transposed_backward(residuals, g):
    x16, t16, x_like, t_like = residuals
    g2 = g.reshape(-1, g.shape[-1])
    x2 = x16.reshape(-1, x16.shape[-1])
    dx = onednn_matmul.matmul(g2, t16).reshape(x16.shape)
    dtable = onednn_matmul.matmul(g2, x2, transpose_a=True)
    return dx.astype(x_like.dtype), dtable.astype(t_like.dtype)


_transposed.defvjp(_transposed_forward, _transposed_backward)


def dense(x: jax.Array, kernel: jax.Array, bias: jax.Array | None, dtype) -> jax.Array:
    """x [..., K] @ kernel [K, N] (+ bias [N]) on oneDNN, returned in `dtype`.

    The bias is added to the float32 product before the cast (nnx.Linear adds it in
    the compute dtype: the same value up to one rounding)."""
    y = bf16_matmul(x, kernel)
    if bias is not None:
        y = y + bias.astype(jnp.float32)
    return y.astype(dtype)
