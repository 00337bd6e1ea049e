"""Logical-axis rules: which mesh axis splits which dimension of each model parameter.

Two tables, as in Flax's logical partitioning (`nn.logical_to_mesh_axes`; NNX
`sharding_names` metadata):

  PARAM_AXES          parameter path -> logical names of its trailing dimensions
  LOGICAL_AXIS_RULES  logical name -> mesh axis (None: replicated)

The model module is left unannotated (HF-compatible, loaded from safetensors); the
parameter layout it documents (mtrl/models/transformer.py) is matched here by path. A
leaf's leading dimensions beyond the named trailing ones (the agent axis of separate
agents, the stacked `layers` axis) are replicated. Optimizer moments carry the
parameter's path as a suffix (`opt_state[..].mu['layers'][..]`) and the same shape, so
the same rule gives them the same sharding; scalars (Adam's count) are replicated.

Default rules (fsdp on the model dimension, tensor on heads and MLP units):

    embed    -> fsdp     hidden size D of every matrix
    heads    -> tensor   query heads x head_dim (q_proj out, o_proj in)
    kv_heads -> tensor   key/value heads x head_dim (k_proj, v_proj out)
    mlp      -> tensor   intermediate size F
    vocab    -> None     the byte vocabulary (259) and released ones (151936 = 2^7·1187)
                         do not divide most tensor sizes; the table is split on D instead
    norm     -> None     gains are tiny and read by every device
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import jax
from jax.sharding import PartitionSpec

from mtrl.models.config import ModelConfig

# (regex searched in the "/"-joined dict-key path, logical names of trailing dims)
PARAM_AXES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"embed_tokens/embedding$", ("vocab", "embed")),
    (r"lm_head/kernel$", ("embed", "vocab")),
    (r"self_attn/q_proj/kernel$", ("embed", "heads")),
    (r"self_attn/(k|v)_proj/kernel$", ("embed", "kv_heads")),
    (r"self_attn/q_proj/bias$", ("heads",)),
    (r"self_attn/(k|v)_proj/bias$", ("kv_heads",)),
    (r"self_attn/o_proj/kernel$", ("heads", "embed")),
    (r"self_attn/o_proj/bias$", ("norm",)),
    (r"self_attn/(q|k)_norm/weight$", ("norm",)),
    (r"mlp/(gate|up)_proj/kernel$", ("embed", "mlp")),
    (r"mlp/(gate|up)_proj/bias$", ("mlp",)),
    (r"mlp/down_proj/kernel$", ("mlp", "embed")),
    (r"mlp/down_proj/bias$", ("norm",)),
    (r"(layernorm|norm)/weight$", ("norm",)),
)

LOGICAL_AXIS_RULES: tuple[tuple[str, str | None], ...] = (
    ("embed", "fsdp"),
    ("heads", "tensor"),
    ("kv_heads", "tensor"),
    ("mlp", "tensor"),
    ("vocab", None),
    ("norm", None),
)


def path_names(path: Sequence[Any]) -> str:
    """The dict keys of a jax key path joined by "/" (attribute and index keys dropped):
    .opt_state[1][0].mu['layers']['mlp']['up_proj']['kernel'].value -> layers/mlp/up_proj/kernel."""
    return "/".join(str(k.key) for k in path if isinstance(k, jax.tree_util.DictKey))


def logical_axes(names: str) -> tuple[str, ...] | None:
    """Logical names of the trailing dimensions of the parameter at `names`, or None
    when no rule matches (the leaf is then replicated)."""
    for pattern, axes in PARAM_AXES:
        if re.search(pattern, names):
            return axes
    return None


def partition_spec(names: str, shape: Sequence[int], mesh_shape: Mapping[str, int],
                   rules: Sequence[tuple[str, str | None]] = LOGICAL_AXIS_RULES
                   ) -> PartitionSpec:
    """The PartitionSpec of one leaf: its trailing dims per PARAM_AXES and `rules`,
    leading dims replicated. A split dimension must divide evenly (ValueError naming
    the leaf otherwise); a mesh axis of size 1 is left out of the spec."""
    axes = logical_axes(names)
    if axes is None or len(shape) < len(axes):
        return PartitionSpec()
    table = dict(rules)
    spec: list[str | None] = [None] * (len(shape) - len(axes))
    for dim, name in zip(shape[len(shape) - len(axes):], axes):
        mesh_axis = table.get(name)
        if mesh_axis is None or mesh_shape.get(mesh_axis, 1) == 1:
            spec.append(None)
            continue
        if dim % mesh_shape[mesh_axis]:
            raise ValueError(f"{mesh_axis}={mesh_shape[mesh_axis]} does not divide the "
                             f"{name} dimension ({dim}) of {names}")
        spec.append(mesh_axis)
    return PartitionSpec(*spec)


def check_model_fits(model: ModelConfig, mesh_shape: Mapping[str, int]) -> None:
    """One-line ValueError when the model's dimensions do not split over the mesh:
    tensor must divide num_heads, num_kv_heads and intermediate_size (whole heads per
    device), fsdp must divide hidden_size."""
    tensor, fsdp = mesh_shape.get("tensor", 1), mesh_shape.get("fsdp", 1)
    for name in ("num_heads", "num_kv_heads", "intermediate_size"):
        value = getattr(model, name)
        if value % tensor:
            raise ValueError(f"tensor={tensor} does not divide the model's {name} ({value})")
    if model.hidden_size % fsdp:
        raise ValueError(f"fsdp={fsdp} does not divide the model's hidden_size "
                         f"({model.hidden_size})")


def tree_partition_specs(tree: Any, mesh_shape: Mapping[str, int]) -> Any:
    """A PartitionSpec per array leaf of `tree` (params, optimizer state, TrainState)."""
    def spec(path, leaf):
        return partition_spec(path_names(path), leaf.shape, mesh_shape)
    return jax.tree_util.tree_map_with_path(spec, tree)
