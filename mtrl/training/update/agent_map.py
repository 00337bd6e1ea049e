"""Mapping a per-agent function over the agent axis: vmap, or agents one after another.

The update computes each agent's objective on its own rows ([N, B, L] → N results).
`jax.vmap` batches the agents into one program; that is the default. With cuDNN
attention it cannot: jax's cuDNN batching rule reshapes a batched attention bias to
[batch, heads, T, S], which a mask broadcast over heads ([B, 1, T, S], the tree and
packing masks) is not (jax 0.11.2 on an H200: "cannot reshape array of shape
(1, 24, 1, 2048, 2048) into shape (24, 14, 2048, 2048)", bench/records/gpu/). Broadcasting the
mask to every head would keep a [B, heads, L, L] bias per layer for the backward pass
(67 GB on a 0.5B model's 24 bins of 2048), so cuDNN models map with `jax.lax.map`:
each agent's forward and backward in turn, which also holds one agent's activations at
a time instead of N.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
from flax import nnx

from mtrl.models.attention import resolve_implementation


def uses_cudnn(graphdef: nnx.GraphDef, params: Any) -> bool:
    """Whether the model's cache-free attention resolves to cuDNN on this backend
    (`params` any one agent's parameters: only the static config is read)."""
    config = nnx.merge(graphdef, params).config
    return resolve_implementation(config.attention, config.compute_dtype,
                                  config.head_dim) == "cudnn"


def map_agents(fn: Callable, in_axes: tuple, *args, sequential: bool) -> Any:
    """fn mapped over the leading (agent) axis of the args whose in_axes entry is 0
    (None: passed whole to every call), like jax.vmap(fn, in_axes)(*args);
    sequential=True runs the agents one after another (jax.lax.map)."""
    if len(in_axes) != len(args) or any(axis not in (0, None) for axis in in_axes):
        raise ValueError(f"in_axes must hold 0 or None per argument, got {in_axes} "
                         f"for {len(args)} arguments")
    if not sequential:
        return jax.vmap(fn, in_axes=in_axes)(*args)
    mapped = tuple(a for a, axis in zip(args, in_axes) if axis == 0)

    def one(xs):
        it = iter(xs)
        return fn(*(next(it) if axis == 0 else a for a, axis in zip(args, in_axes)))

    return jax.lax.map(one, mapped)
