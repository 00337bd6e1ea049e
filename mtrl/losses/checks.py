"""Entry checks shared by the loss functions: ranks, shapes and dtypes.

Shapes are static under jax.jit and jax.vmap, so these checks run once at trace
time and cost nothing per step. They raise ValueError with the offending
argument's name, its shape and the expected layout.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np


def check_shapes(layout: str, **arrays) -> tuple[int, ...]:
    """Checks that every array has the rank of `layout` and that all shapes agree.

    Args:
      layout: the expected layout, e.g. "[L]" or "[B, L]"; its rank is the
        number of comma-separated names.
      **arrays: the arrays to check, by argument name.

    Returns:
      The common shape.
    """
    rank = len([d for d in layout.strip("[]").split(",") if d.strip()])
    shape: tuple[int, ...] | None = None
    first = ""
    for name, x in arrays.items():
        x_shape = tuple(np.shape(x))
        if len(x_shape) != rank:
            raise ValueError(f"{name} must have layout {layout} (rank {rank}), got shape {x_shape}")
        if shape is None:
            shape, first = x_shape, name
        elif x_shape != shape:
            raise ValueError(f"{name} has shape {x_shape} but {first} has shape {shape}; "
                             f"both must be {layout}")
    if shape is None:
        raise ValueError("check_shapes needs at least one array")
    return shape


def check_bool(name: str, x) -> None:
    """Masks are boolean: a float 0/1 mask is rejected rather than guessed at."""
    if jnp.result_type(x) != jnp.bool_:
        raise ValueError(f"{name} must be a boolean mask, got dtype {jnp.result_type(x)}")


def check_floating(name: str, x) -> None:
    if not jnp.issubdtype(jnp.result_type(x), jnp.floating):
        raise ValueError(f"{name} must be floating point, got dtype {jnp.result_type(x)}")


def check_integer(name: str, x) -> None:
    if not jnp.issubdtype(jnp.result_type(x), jnp.integer):
        raise ValueError(f"{name} must be an integer array, got dtype {jnp.result_type(x)}")
