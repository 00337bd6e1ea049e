"""Hugging Face checkpoints (config.json + *.safetensors) in and out, without torch.

Tensors are read and written with `safetensors` in its numpy flavour; bfloat16 arrives
as an `ml_dtypes.bfloat16` numpy array (the dtype jax uses), so nothing is upcast on the
way. A checkpoint is either one `model.safetensors` or shards listed by
`model.safetensors.index.json` (transformers' `save_pretrained(max_shard_size=...)`).

Name mapping (transformers' *ForCausalLM -> Transformer state, see transformer.py):

  model.embed_tokens.weight                    embed_tokens.embedding
  model.layers.{i}.<module>.weight [out, in]   layers.<module>.kernel[i] = weight.T  (*_proj)
  model.layers.{i}.<module>.weight / .bias     layers.<module>.weight[i] / .bias[i]  (norms, biases)
  model.norm.weight                            norm.weight
  lm_head.weight [V, D]                        lm_head.kernel = weight.T (absent when tied)
"""

from __future__ import annotations

import json
import os
import pathlib
import re
from typing import Any, Iterator

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from safetensors import safe_open
from safetensors.numpy import save_file

from mtrl.checksums import verify_manifest
from mtrl.models.config import ModelConfig
from mtrl.models.transformer import Transformer

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
_LAYER = re.compile(r"^layers\.(\d+)\.(.+)$")
# Buffers some exporters store that carry no trainable information.
_IGNORED = re.compile(r"(^|\.)rotary_emb\.inv_freq$")

PathTuple = tuple[str, ...]


def _hf_to_path(name: str) -> tuple[PathTuple, int | None, bool]:
    """HF tensor name -> (state path, layer index or None, transpose?)."""
    inner = name[len("model."):] if name.startswith("model.") else name
    if inner == "embed_tokens.weight":
        return ("embed_tokens", "embedding"), None, False
    if name == "lm_head.weight":
        return ("lm_head", "kernel"), None, True
    layer = None
    match = _LAYER.match(inner)
    if match:
        layer, inner = int(match.group(1)), match.group(2)
    parts = tuple(inner.split("."))
    if layer is not None:
        parts = ("layers",) + parts
    if parts[-1] == "weight" and parts[-2].endswith("_proj"):
        return parts[:-1] + ("kernel",), layer, True
    return parts, layer, False


def _path_to_hf(path: PathTuple, layer: int | None) -> tuple[str, bool]:
    """Inverse of _hf_to_path: state path (+ layer) -> (HF name, transpose?)."""
    if path == ("embed_tokens", "embedding"):
        return "model.embed_tokens.weight", False
    if path == ("lm_head", "kernel"):
        return "lm_head.weight", True
    transpose = path[-1] == "kernel"
    parts = path[:-1] + ("weight",) if transpose else path
    if path[0] == "layers":
        return f"model.layers.{layer}." + ".".join(parts[1:]), transpose
    return "model." + ".".join(parts), transpose


def _flat(tree: dict, prefix: PathTuple = ()) -> Iterator[tuple[PathTuple, Any]]:
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from _flat(value, prefix + (str(key),))
        else:
            yield prefix + (str(key),), value


def _set(tree: dict, path: PathTuple, value: Any) -> None:
    for key in path[:-1]:
        tree = tree[key]
    tree[path[-1]] = value


def abstract_model(config: ModelConfig) -> Transformer:
    """A Transformer whose arrays are ShapeDtypeStructs (no memory, no random init)."""
    return nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0)))


def model_from_hf_tensors(config: ModelConfig, tensors: Iterator[tuple[str, np.ndarray]]
                          ) -> Transformer:
    """Build a Transformer from (HF name, [out, in]-layout array) pairs.

    Every parameter must be provided exactly once; unknown names are an error, except
    `lm_head.weight` when embeddings are tied (some exporters store the copy) and
    rotary inverse-frequency buffers.
    """
    graph, abstract_state = nnx.split(abstract_model(config))
    shapes = {path: leaf for path, leaf in _flat(nnx.to_pure_dict(abstract_state))}
    dtype = config.weight_dtype
    host: dict[PathTuple, np.ndarray] = {}
    filled: dict[PathTuple, set[int | None]] = {path: set() for path in shapes}
    for name, array in tensors:
        if _IGNORED.search(name):
            continue
        path, layer, transpose = _hf_to_path(name)
        if path not in shapes:
            if path == ("lm_head", "kernel") and config.tie_word_embeddings:
                continue
            raise ValueError(f"checkpoint tensor {name!r} has no place in a {config.family} "
                             f"model with this config")
        if layer is not None and not 0 <= layer < config.num_layers:
            raise ValueError(f"{name!r}: layer {layer} outside [0, {config.num_layers})")
        target = shapes[path]
        array = np.asarray(array)
        if transpose:
            array = array.T
        expected = target.shape[1:] if layer is not None else target.shape
        if array.shape != tuple(expected):
            raise ValueError(f"{name!r}: shape {array.shape} (after transpose) != "
                             f"expected {tuple(expected)}")
        if layer in filled[path]:
            raise ValueError(f"{name!r} appears twice in the checkpoint")
        if layer is None:
            host[path] = array.astype(dtype)
        else:
            if path not in host:
                host[path] = np.empty(target.shape, dtype)
            host[path][layer] = array.astype(dtype)
        filled[path].add(layer)
    for path, target in shapes.items():
        want = set(range(config.num_layers)) if path[0] == "layers" else {None}
        if filled[path] != want:
            missing = sorted(want - filled[path], key=str)
            raise ValueError(f"checkpoint lacks {'.'.join(path)} (layers {missing})"
                             if path[0] == "layers" else
                             f"checkpoint lacks {_path_to_hf(path, None)[0]}")
    pure = nnx.to_pure_dict(abstract_state)
    for path, array in host.items():
        _set(pure, path, jnp.asarray(array))
    nnx.replace_by_pure_dict(abstract_state, pure)
    return nnx.merge(graph, abstract_state)


def hf_tensors(model: Transformer) -> dict[str, np.ndarray]:
    """The model's parameters as HF-named numpy arrays ([out, in] kernels, per layer),
    in param_dtype. Tied models have no lm_head.weight."""
    out: dict[str, np.ndarray] = {}
    for path, value in _flat(nnx.to_pure_dict(nnx.state(model, nnx.Param))):
        array = np.asarray(jax.device_get(value))
        if path[0] == "layers":
            for layer in range(array.shape[0]):
                name, transpose = _path_to_hf(path, layer)
                out[name] = np.ascontiguousarray(array[layer].T if transpose else array[layer])
        else:
            name, transpose = _path_to_hf(path, None)
            out[name] = np.ascontiguousarray(array.T if transpose else array)
    return out


def _read_tensors(files: list[pathlib.Path]) -> Iterator[tuple[str, np.ndarray]]:
    for file in files:
        with safe_open(os.fspath(file), framework="numpy") as handle:
            for name in handle.keys():
                yield name, handle.get_tensor(name)


def checkpoint_files(path: str | os.PathLike) -> list[pathlib.Path]:
    """The safetensors files of a checkpoint directory (index first, else all files)."""
    directory = pathlib.Path(path)
    index = directory / INDEX_FILE
    if index.is_file():
        weight_map = json.loads(index.read_text())["weight_map"]
        files = [directory / name for name in sorted(set(weight_map.values()))]
        for file in files:
            if not file.is_file():
                raise FileNotFoundError(f"{INDEX_FILE} names {file.name}, which is missing")
        return files
    files = sorted(directory.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no *.safetensors (or {INDEX_FILE}) in {directory}")
    return files


def load_hf_checkpoint(path: str | os.PathLike, **config_overrides: Any) -> Transformer:
    """Transformer from a local directory with config.json and safetensors weights.

    config_overrides replace ModelConfig fields read from config.json, e.g.
    `dtype="float32", param_dtype="float32"` to compute a bf16 checkpoint in float32
    (weights are cast to param_dtype on load; by default both follow config.json).
    """
    directory = pathlib.Path(path)
    config_file = directory / "config.json"
    if not config_file.is_file():
        raise FileNotFoundError(f"no config.json in {directory}")
    config = ModelConfig.from_hf_config(json.loads(config_file.read_text()), **config_overrides)
    verify_manifest(directory)  # an export's checksums (mtrl/checksums.py), if it has them
    return model_from_hf_tensors(config, _read_tensors(checkpoint_files(directory)))


def save_hf_checkpoint(model: Transformer, path: str | os.PathLike, *,
                       max_shard_bytes: int | None = None) -> list[pathlib.Path]:
    """Write config.json and safetensors weights that transformers' from_pretrained loads.

    With max_shard_bytes, tensors are packed in order into shards of at most that size
    (a tensor larger than the limit gets a shard of its own) and listed in
    model.safetensors.index.json; otherwise one model.safetensors. Returns the files.
    """
    if max_shard_bytes is not None and max_shard_bytes <= 0:
        raise ValueError(f"max_shard_bytes must be > 0, got {max_shard_bytes}")
    directory = pathlib.Path(path)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = hf_tensors(model)
    (directory / "config.json").write_text(json.dumps(model.config.to_hf_config(), indent=2))
    metadata = {"format": "pt"}  # transformers refuses safetensors without this tag
    if max_shard_bytes is None:
        file = directory / SINGLE_FILE
        save_file(tensors, os.fspath(file), metadata=metadata)
        return [directory / "config.json", file]
    shards: list[dict[str, np.ndarray]] = [{}]
    size = 0
    for name, array in tensors.items():
        if shards[-1] and size + array.nbytes > max_shard_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = array
        size += array.nbytes
    files, weight_map = [directory / "config.json"], {}
    for number, shard in enumerate(shards, start=1):
        file = directory / f"model-{number:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, os.fspath(file), metadata=metadata)
        weight_map.update({name: file.name for name in shard})
        files.append(file)
    index = {"metadata": {"total_size": int(sum(a.nbytes for a in tensors.values()))},
             "weight_map": weight_map}
    (directory / INDEX_FILE).write_text(json.dumps(index, indent=2))
    files.append(directory / INDEX_FILE)
    return files
