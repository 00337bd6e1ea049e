"""Config files and the paths they name.

`module_from_file(path)` loads a config file (or a block it builds on) by path.

`resolve_paths(config, config_file)`: relative paths in a config are found from the
checkout, then the config file. The configs name data and weights relative to the
checkout (`../shared/data/gsm8k`, `models/smollm2-135m-instruct`); resolved from the
current directory, a run started anywhere else failed to find them. The launcher
rewrites each relative path field to an absolute one before the run is built: the
checkout's root when the path exists there, else the config file's folder when it
exists there, else the checkout's root (so a missing-data error names the absolute
path that was looked for). Absolute and `~` paths are kept.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import types

CHECKOUT = pathlib.Path(__file__).resolve().parents[3]
# Dotted fields that hold a file or folder (tokenizer: when it is a path, not a name).
PATH_FIELDS = ("data.path", "model.hf_checkpoint", "data.options.train_ids_file",
               "tokenizer")


def module_from_file(path: str | os.PathLike) -> types.ModuleType:
    """The Python file at `path` executed as a fresh module named after its stem (not
    entered in sys.modules).

    Config files are loaded by path (ml_collections' config_flags, the tests), not
    imported from a package, so what a config builds on (the shared blocks in
    experiments/configs/common/, another config) is loaded by path too.
    """
    path = pathlib.Path(path)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_MISSING = object()


def field_value(config, dotted: str, missing=None):
    """The value at a dotted path of a ConfigDict ("train.eval_samples"), or `missing`
    when the config has no such field."""
    node = config
    for name in dotted.split("."):
        if not hasattr(node, "keys") or name not in node:
            return missing
        node = node[name]
    return node


def has_field(config, dotted: str) -> bool:
    return field_value(config, dotted, _MISSING) is not _MISSING


def _set(config, dotted: str, value: str) -> None:
    *parents, name = dotted.split(".")
    node = config
    for parent in parents:
        node = node[parent]
    node[name] = value


def resolve(value: str, config_file: str | os.PathLike | None) -> str:
    """The absolute path a config's relative `value` stands for (see the module)."""
    if os.path.isabs(os.path.expanduser(value)):
        return value
    candidates = [CHECKOUT / value]
    if config_file:
        candidates.append(pathlib.Path(config_file).resolve().parent / value)
    for candidate in candidates:
        if candidate.exists():
            return str(candidate.resolve())
    return str(candidates[0].resolve())


def resolve_paths(config, config_file: str | os.PathLike | None) -> None:
    """Rewrites the relative paths of PATH_FIELDS in `config` in place."""
    for field in PATH_FIELDS:
        value = field_value(config, field)
        if not isinstance(value, str) or not value:
            continue
        if field == "tokenizer" and os.sep not in value:
            continue  # a registered tokenizer name ('byte')
        _set(config, field, resolve(value, config_file))
