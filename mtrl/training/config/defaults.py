"""The embedded default config: every field of a run with its default value.

Config files in experiments/configs/ start from `base_config()` and override what
differs, some through blocks they share (loaded with files.module_from_file); a
field that is not here does not exist (`--config.<section>.<field>` can only set
one that is). The values are defaults_table.py's, generated from the section
dataclasses and the registries' options (generate.py): each default is written once,
where its section or option is defined. Importing this module imports no jax.
"""

from __future__ import annotations

import copy

import ml_collections
from ml_collections.config_dict import placeholder

from mtrl.training.config.defaults_table import NONE_TYPES, SECTIONS, TOP_LEVEL

_TYPES = {"float": float, "int": int, "str": str, "bool": bool}


def base_config() -> ml_collections.ConfigDict:
    c = ml_collections.ConfigDict()
    for name, value in TOP_LEVEL.items():
        c[name] = value
    for name, fields in SECTIONS.items():
        # A field whose default is None (unset) is typed, so a flag can set it.
        c[name] = {field: (placeholder(_TYPES[NONE_TYPES[f"{name}.{field}"]])
                           if f"{name}.{field}" in NONE_TYPES else copy.deepcopy(value))
                   for field, value in fields.items()}
    return c


def base_value(dotted: str):
    """The embedded default of a field, "section.field" or a top-level name."""
    if "." not in dotted:
        return copy.deepcopy(TOP_LEVEL[dotted])
    section, field = dotted.split(".", 1)
    return copy.deepcopy(SECTIONS[section][field])
