"""The run's `mesh` section (a MeshConfig, read from the experiment config by
mtrl/training/config/readers.py) -> the run's ShardingPlan.

    c.mesh = dict(shape="auto")     # or "d,f,t", e.g. --config.mesh.shape=2,4,1

With one device and shape "auto" there is nothing to split: no plan (None), and the
train step and sampler run their single-device programs unchanged. Every error is one
line naming config.mesh.shape.
"""

from __future__ import annotations

import jax

from mtrl.models.config import ModelConfig
from mtrl.parallel.mesh import MeshConfig, parse_shape
from mtrl.parallel.shardings import ShardingPlan


def plan_for(mesh: MeshConfig, model: ModelConfig, devices: list | None = None
             ) -> ShardingPlan | None:
    """The plan of the mesh section over `devices` (default: all global devices), or
    None when there is a single device and the shape is "auto"."""
    devices = list(jax.devices() if devices is None else devices)
    if len(devices) == 1 and parse_shape(mesh.shape) is None:
        return None
    try:
        return ShardingPlan.build(mesh, model, devices)
    except ValueError as e:
        raise ValueError(f"config.mesh.shape: {e}") from None
