"""Typed PRNG keys in checkpoints (checkpointing.py).

Typed keys (`jax.random.key`) cannot be serialized as arrays: they are saved as
`jax.random.key_data` (uint32) with their implementation name recorded in the
checkpoint's `meta`, and rewrapped with `jax.random.wrap_key_data` on restore. Raw
uint32 keys (`jax.random.PRNGKey`) are ordinary arrays and round-trip unchanged.
"""

from __future__ import annotations

from typing import Any, Mapping

import jax


def is_typed_key(leaf: Any) -> bool:
    dtype = getattr(leaf, "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def split_typed_keys(state: Any) -> tuple[Any, dict[str, str]]:
    """Replaces typed PRNG keys by their uint32 key data; returns the paths and impls."""
    typed: dict[str, str] = {}

    def to_data(path, leaf):
        if is_typed_key(leaf):
            typed[jax.tree_util.keystr(path)] = str(jax.random.key_impl(leaf))
            return jax.random.key_data(leaf)
        return leaf

    return jax.tree_util.tree_map_with_path(to_data, state), typed


def key_data_target(target: Any) -> tuple[Any, dict[str, Any]]:
    """The target with typed-key leaves (arrays or ShapeDtypeStructs) replaced by the
    abstract uint32 arrays that were actually saved; also their paths and dtypes."""
    typed: dict[str, Any] = {}

    def to_abstract(path, leaf):
        if is_typed_key(leaf):
            typed[jax.tree_util.keystr(path)] = leaf.dtype
            return jax.eval_shape(jax.random.key_data, leaf)
        return leaf

    return jax.tree_util.tree_map_with_path(to_abstract, target), typed


def check_target_keys(saved: Mapping[str, str], target: Mapping[str, Any]) -> None:
    """The target must hold typed keys exactly where they were saved, of the same impl."""
    if set(saved) != set(target):
        raise ValueError(f"typed PRNG keys differ: saved at {sorted(saved)}, "
                         f"target has them at {sorted(target)}")
    for path, impl in saved.items():
        if jax.random.key(0, impl=impl).dtype != target[path]:
            raise ValueError(f"PRNG key {path} was saved as {impl}, target has {target[path]}")


def wrap_typed_keys(state: Any, typed: Mapping[str, str]) -> Any:
    found: set[str] = set()

    def wrap(path, leaf):
        name = jax.tree_util.keystr(path)
        if name in typed:
            found.add(name)
            return jax.random.wrap_key_data(leaf, impl=typed[name])
        return leaf

    wrapped = jax.tree_util.tree_map_with_path(wrap, state)
    missing = set(typed) - found
    if missing:
        raise ValueError(
            f"saved typed PRNG keys at {sorted(missing)} are not in the restored tree; "
            "pass a `target` with the structure that was saved")
    return wrapped
