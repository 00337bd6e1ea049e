"""Activation rematerialisation of the decoder layers (the cache-free forward).

The backward pass of a layer needs its forward's intermediates. Policies (per layer,
applied to the body of the layer scan with jax.checkpoint):

  none  keep every intermediate (fastest, most memory: the attention probabilities
        [B, heads, L, L] and the MLP's [B, L, F] activations of every layer)
  dots  keep only the outputs of matrix products without a batch dimension (the
        projections); recompute attention scores/probabilities and elementwise work
  full  keep only each layer's input; recompute the whole layer in the backward pass
        (about one extra forward, i.e. ~4/3 of the compute, least memory)
"""

from __future__ import annotations

from typing import Callable

import jax

REMAT_POLICIES = {
    "none": None,
    "dots": jax.checkpoint_policies.dots_with_no_batch_dims_saveable,
    "full": jax.checkpoint_policies.nothing_saveable,
}


def check_remat(name: str) -> str:
    if name not in REMAT_POLICIES:
        raise ValueError(f"remat must be one of {sorted(REMAT_POLICIES)}, got {name!r}")
    return name


def remat_layer(layer: Callable, name: str) -> Callable:
    """`layer` (a scan body) wrapped in jax.checkpoint with the named policy."""
    check_remat(name)
    if name == "none":
        return layer
    return jax.checkpoint(layer, policy=REMAT_POLICIES[name], prevent_cse=False)
