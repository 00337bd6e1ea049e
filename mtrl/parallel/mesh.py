"""The device mesh of a run: named axes (data, fsdp, tensor) over all global devices.

    data    batch rows split, parameters replicated (pure data parallelism)
    fsdp    batch rows split *and* parameters / optimizer moments split along their
            `embed` dimension (ZeRO-3 / FSDP: each device holds 1/fsdp of the weights and
            XLA all-gathers a layer's weights where a matmul needs them)
    tensor  attention heads and MLP hidden units split (Megatron-style tensor
            parallelism; Shoeybi et al. 2019)

`mesh.shape` is "auto" (every device on `data`) or "d,f,t" with d·f·t = the number of
global devices (jax.device_count(), all processes together). The mesh uses
`AxisType.Auto` axes: shardings are GSPMD annotations on inputs and outputs and XLA
propagates them through the step (Xu et al. 2021, "GSPMD").
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import jax
from jax.sharding import AxisType, Mesh

AXES = ("data", "fsdp", "tensor")
# Axes that split the rows of a batch (both data and fsdp consume distinct rows).
BATCH_AXES = ("data", "fsdp")


def parse_shape(shape: str | Sequence[int]) -> tuple[int, ...] | None:
    """"auto" -> None; "2,4,1" or (2, 4, 1) -> (2, 4, 1). One-line ValueError otherwise."""
    if isinstance(shape, str):
        text = shape.strip().lower()
        if text == "auto":
            return None
        try:
            values = tuple(int(v) for v in text.replace("x", ",").split(","))
        except ValueError:
            raise ValueError(f"shape must be 'auto' or {len(AXES)} integers 'd,f,t' "
                             f"({', '.join(AXES)}), got {shape!r}") from None
    else:
        values = tuple(shape)
    if len(values) != len(AXES) or any(
            isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
        raise ValueError(f"shape must be {len(AXES)} integers >= 1 over axes {AXES}, "
                         f"got {shape!r}")
    return values


@dataclasses.dataclass(frozen=True)
class MeshConfig:
    """The `mesh` section. shape: "auto" (all devices on data) or "d,f,t"."""

    shape: str = "auto"

    def __post_init__(self):
        parse_shape(self.shape)

    def axis_sizes(self, num_devices: int) -> tuple[int, ...]:
        """(data, fsdp, tensor) for `num_devices` devices; one-line error if they differ."""
        shape = parse_shape(self.shape)
        if shape is None:
            return (num_devices, 1, 1)
        if math.prod(shape) != num_devices:
            raise ValueError(f"shape {self.shape!r} needs {math.prod(shape)} devices "
                             f"({'x'.join(map(str, shape))}), but {num_devices} are visible")
        return shape


def make_mesh(config: MeshConfig, devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A Mesh over `devices` (default: every global device) with axes AXES.

    jax.make_mesh orders devices so that the fastest links (within a host, within a
    TPU slice) land on the last axes; `tensor`, which communicates every layer, is last.
    """
    devices = list(jax.devices() if devices is None else devices)
    sizes = config.axis_sizes(len(devices))
    return jax.make_mesh(sizes, AXES, axis_types=(AxisType.Auto,) * len(AXES),
                         devices=devices)


def batch_size_divisor(mesh: Mesh) -> int:
    """How many ways a batch's rows are split: data · fsdp."""
    return math.prod(mesh.shape[a] for a in BATCH_AXES)
