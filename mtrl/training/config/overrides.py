"""A config file with "a.b=value" overrides applied, parsed as the trainer parses them.

`python -m mtrl.train --config=F --config.a.b=v` hands the overrides to ml_collections'
config flags, which type each value by the field it sets (an int field refuses "two")
and refuse a field the config does not define. Tools that need the resolved config
before (or without) a run (a claim checking what its arms will measure, a script
preparing its games) apply the same overrides the same way here, rather than splitting
"key=value" themselves and guessing types. "field=None" sets the embedded default, as
the trainer's unset does (ml_collections cannot parse None for a typed field).
"""

from __future__ import annotations

import os
from typing import Sequence

from absl import flags
from ml_collections import config_flags

from mtrl.training.config.defaults import base_value
from mtrl.training.config.files import has_field, module_from_file


def _strip(override: str) -> str:
    """"a.b=v" from "a.b=v", "--config.a.b=v" or "-config.a.b=v"."""
    for prefix in ("--config.", "-config."):
        if override.startswith(prefix):
            return override[len(prefix):]
    return override


def apply_overrides(config, overrides: Sequence[str]):
    """`config` (a ConfigDict, changed in place and returned) with each "a.b=value" of
    `overrides` set, later ones winning; ValueError in one line for a malformed override,
    an unknown field or a value of the wrong type."""
    typed, unset = [], []
    for raw in overrides:
        override = _strip(raw.strip())
        key, eq, value = override.partition("=")
        if not eq or not key:
            raise ValueError(f"override {raw!r}: expected field=value")
        if not has_field(config, key):
            raise ValueError(f"override {raw!r}: the config has no field {key!r}")
        (unset if value == "None" else typed).append((key, value))
    argv = ["overrides", *(f"--config.{k}={v}" for k, v in typed)]
    names = flags.FlagValues()  # a private flag set: nothing leaks into absl's globals
    try:  # the field flags are defined from argv when the config flag is defined
        config_flags.DEFINE_config_dict("config", config, flag_values=names, sys_argv=argv)
        names(argv)
    except flags.Error as error:
        raise ValueError(f"override: {error}") from None
    for key, _ in unset:
        *parents, name = key.split(".")
        node = config
        for parent in parents:
            node = node[parent]
        default = base_value(key)
        with node.unlocked():
            node[name] = default
    return config


def config_with_overrides(path: str | os.PathLike, overrides: Sequence[str]):
    """The config file at `path` (its get_config()) with `overrides` applied."""
    return apply_overrides(module_from_file(path).get_config(), overrides)
