"""bfloat16 matmuls with float32 accumulation on oneDNN, as an XLA:CPU FFI custom call.

    matmul(a, b, transpose_a=False, transpose_b=False) -> float32 [M, N]
        = op(a) @ op(b), op(a) = a [M, K] or a.T, op(b) = b [K, N] or b.T,

a and b cast to bfloat16 (round to nearest even), products summed in float32. oneDNN
chooses its kernel for the CPU (AMX tiles where /proc/cpuinfo has amx_bf16 and
amx_tile: kernel "brg:avx512_core_amx"). The library is compiled by
`python -m mtrl.kernels.build`; `load()` (mtrl/kernels/library.py) says why it is
unavailable (not built, stale, no oneDNN) instead of raising, so callers fall back to XLA.
Batched operands go through `jax.vmap` one slice at a time (vmap_method "sequential").
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from mtrl.kernels import library
from mtrl.kernels.library import available, load  # noqa: F401 (the kernel's state)

TARGET = "mtrl_onednn_matmul"


def require() -> None:
    """Raise RuntimeError (one line, the reason) unless the kernel is ready."""
    library.require("oneDNN matmul")


@functools.cache
def unusable_reason() -> str | None:
    """None when the library is loaded and this CPU runs oneDNN's bf16 matmul; else why
    not. oneDNN 3.2 has no bf16 matmul below AVX-512 (an AVX2-only CPU, e.g. some AMD
    EPYC hosts): there the primitive cannot be created and the matmul stays on XLA."""
    reason = load()
    if reason is not None:
        return reason
    info = impl_info(16, 16, 16)
    if info.startswith("error"):
        return f"this CPU has no oneDNN bf16 matmul ({info.removeprefix('error: ')})"
    return None


def usable() -> bool:
    """The kernel is built, loaded and runs on this CPU (unusable_reason says why not)."""
    return unusable_reason() is None


def impl_info(m: int, k: int, n: int) -> str:
    """The oneDNN kernel an [m, k] @ [k, n] bf16 product runs, e.g. 'brg:avx512_core_amx'."""
    require()
    return library.handle().mtrl_onednn_impl_info(m, k, n).decode()


def matmul(a: jax.Array, b: jax.Array, *, transpose_a: bool = False,
           transpose_b: bool = False) -> jax.Array:
    """float32 op(a) @ op(b) on oneDNN with bfloat16 inputs (see the module docstring)."""
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"matmul takes 2-D operands, got {a.shape} and {b.shape}")
    m, k = a.shape[::-1] if transpose_a else a.shape
    k_b, n = b.shape[::-1] if transpose_b else b.shape
    if k != k_b:
        raise ValueError(f"contraction sizes differ: {a.shape}{'^T' * transpose_a} @ "
                         f"{b.shape}{'^T' * transpose_b}")
    require()
    call = jax.ffi.ffi_call(TARGET, jax.ShapeDtypeStruct((m, n), jnp.float32),
                            vmap_method="sequential")
    return call(a.astype(jnp.bfloat16), b.astype(jnp.bfloat16),
                transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))
