"""Shardings of a run's arrays on its mesh: parameters, optimizer states, reference
model, train state and batches; and placing host data onto them.

    params / ref_params / opt moments   PARAM_AXES + LOGICAL_AXIS_RULES (rules.py); the
                                        agent axis of separate agents replicated
    batch rows [N, B, ...]              B split over (data, fsdp); N and the rest whole
    scalars, metrics                    replicated

A batch whose row count does not divide data·fsdp (a bucketed sampler batch smaller
than the mesh, a packed bin count) is replicated instead: correct, only less parallel.

Multi-host: every process calls the same functions with its own process-local rows;
`global_rows` assembles them into one global array whose rows are the processes'
rows in process order (jax.make_array_from_process_local_data).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from mtrl.models.config import ModelConfig
from mtrl.parallel.mesh import BATCH_AXES, MeshConfig, batch_size_divisor, make_mesh
from mtrl.parallel.rules import check_model_fits, tree_partition_specs


@dataclasses.dataclass(frozen=True)
class ShardingPlan:
    """The mesh plus the functions that place a run's arrays on it."""

    mesh: Mesh

    @classmethod
    def build(cls, config: MeshConfig, model: ModelConfig,
              devices: list | None = None) -> "ShardingPlan":
        """The plan for `config` on `devices` (default: all global devices); one-line
        ValueError when the shape does not match the devices or the model."""
        mesh = make_mesh(config, devices)
        check_model_fits(model, dict(mesh.shape))
        return cls(mesh)

    # -- shardings ---------------------------------------------------------------------

    @property
    def replicated(self) -> NamedSharding:
        return NamedSharding(self.mesh, PartitionSpec())

    def tree_shardings(self, tree: Any) -> Any:
        """NamedSharding per leaf of params, optimizer state or a whole TrainState."""
        specs = tree_partition_specs(tree, dict(self.mesh.shape))
        return jax.tree.map(lambda spec: NamedSharding(self.mesh, spec), specs,
                            is_leaf=lambda x: isinstance(x, PartitionSpec))

    def rows_sharding(self, shape: tuple[int, ...], row_axis: int) -> NamedSharding:
        """Rows (axis `row_axis`) split over (data, fsdp) when they divide, else replicated."""
        if len(shape) <= row_axis or shape[row_axis] % batch_size_divisor(self.mesh):
            return self.replicated
        spec = [None] * len(shape)
        spec[row_axis] = BATCH_AXES
        return NamedSharding(self.mesh, PartitionSpec(*spec))

    def batch_shardings(self, batch: Any, row_axis: int = 1) -> Any:
        """Per-leaf rows shardings of a batch pytree ([N, B, ...] fields: row_axis 1)."""
        return jax.tree.map(lambda x: self.rows_sharding(np.shape(x), row_axis), batch)

    # -- placement ---------------------------------------------------------------------

    def shard_tree(self, tree: Any) -> Any:
        """`tree` (params, optimizer or train state; single-process values) laid out
        per the rules. Every process passes the same full values."""
        shardings = self.tree_shardings(tree)
        return jax.tree.map(_put_global, tree, shardings)

    def shard_batch(self, batch: Any, row_axis: int = 1) -> Any:
        """A batch of the full global rows (identical on every process) placed with
        its rows split over (data, fsdp)."""
        return jax.tree.map(lambda x: _put_global(x, self.rows_sharding(np.shape(x), row_axis)),
                            batch)

    def global_rows(self, local_batch: Any, row_axis: int = 1) -> Any:
        """The global batch from each process's own rows (process p holds rows
        [p·b, (p+1)·b) of the global batch, b = its local row count)."""
        count = jax.process_count()

        def assemble(x):
            x = np.asarray(x)
            shape = list(x.shape)
            shape[row_axis] *= count
            sharding = self.rows_sharding(tuple(shape), row_axis)
            if sharding.spec == PartitionSpec():
                raise ValueError(f"{shape[row_axis]} global rows do not split over "
                                 f"data·fsdp = {batch_size_divisor(self.mesh)}")
            return jax.make_array_from_process_local_data(sharding, x, tuple(shape))

        return jax.tree.map(assemble, local_batch)


def _put_global(x: Any, sharding: NamedSharding) -> jax.Array:
    """The same full value on every process -> one global array with `sharding`.
    (jax.device_put works within a process; across processes each takes its shards.)"""
    if jax.process_count() == 1:
        return jax.device_put(x, sharding)
    if isinstance(x, jax.Array) and not x.is_fully_addressable:  # already global
        return x if x.sharding == sharding else jax.device_put(x, sharding)
    host = np.asarray(jax.device_get(x)) if isinstance(x, jax.Array) else np.asarray(x)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def committed(tree: Any) -> Any:
    """`tree` with every array committed to the device it is on (no copy): placement
    for a run without a mesh. jit compiles a program per input placement, and an array
    restored from a checkpoint is committed while a fresh one (initialization, SFT) is
    not; without this a run's test after training recompiled every sampler program its
    validation had compiled, and a resumed run its train step, instead of sharing them
    (through a compilation cache, across processes)."""
    return jax.tree.map(lambda x: jax.device_put(x, x.sharding)
                        if isinstance(x, jax.Array) else x, tree)


def bytes_per_device(tree: Any) -> dict[str, int]:
    """Bytes of `tree`'s shards held by each local device (id -> bytes)."""
    out: dict[str, int] = {}
    for leaf in jax.tree.leaves(tree):
        if not isinstance(leaf, jax.Array):
            continue
        for shard in leaf.addressable_shards:
            key = str(shard.device.id)
            out[key] = out.get(key, 0) + shard.data.nbytes
    return out
