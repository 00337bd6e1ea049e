"""The compiled kernel library (libmtrl_onednn.so): loaded and registered once.

`load()` returns None when every handler is registered with XLA:CPU (targets
"mtrl_onednn_matmul" and "mtrl_decode_attention"), else why it is unavailable (not
built, built from another source, does not load), instead of raising, so callers
fall back to XLA. `python -m mtrl.kernels.build` compiles the library.
"""

from __future__ import annotations

import ctypes
import functools

import jax

from mtrl.kernels import build

# ffi target name -> the handler's symbol in the library.
HANDLERS = {"mtrl_onednn_matmul": "MtrlOnednnMatmul",
            "mtrl_decode_attention": "MtrlDecodeAttention"}
_LIBRARY: list[ctypes.CDLL] = []


@functools.cache
def load() -> str | None:
    """Load the library and register its handlers once; None when ready, else why not."""
    if not build.LIBRARY.exists():
        return "kernel not built (python -m mtrl.kernels.build)"
    digest = build.DIGEST.read_text().strip() if build.DIGEST.exists() else ""
    if digest != build.source_digest():
        return "kernel built from another source (rerun python -m mtrl.kernels.build)"
    try:
        library = ctypes.CDLL(str(build.LIBRARY))
        handlers = {target: getattr(library, symbol) for target, symbol in HANDLERS.items()}
    except (OSError, AttributeError) as error:
        return f"kernel does not load: {error}"
    for target, handler in handlers.items():
        jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(handler), platform="cpu")
    library.mtrl_onednn_impl_info.restype = ctypes.c_char_p
    library.mtrl_onednn_impl_info.argtypes = [ctypes.c_int64] * 3
    _LIBRARY[:] = [library]
    return None


def available() -> bool:
    return load() is None


def require(what: str = "mtrl kernels") -> None:
    """Raise RuntimeError (one line, the reason) unless the library is ready."""
    reason = load()
    if reason is not None:
        raise RuntimeError(f"{what} unavailable: {reason}")


def handle() -> ctypes.CDLL:
    """The loaded library (after a successful `load`)."""
    require()
    return _LIBRARY[0]
