"""The experiment config, and the one place the raw ml_collections config is read.

An experiment file starts from `base_config()` and overrides what differs; the entry
point (mtrl/train.py) loads it, resolves its paths and, with --smoke, shrinks it; then
`parse(config) -> RunConfig` reads it once into frozen typed sections, running every
config-only check before any model, data or sandbox work. Outside this package only
mtrl/train.py and the Trainer (which parses a raw config it is given) touch a raw one.

  sections.py  each section's dataclass, the run's own defaults, the entries' options
  generate.py  writes defaults_table.py from sections.py (each default written once)
  defaults.py  base_config(): every field with its default (from defaults_table.py)
  files.py     module_from_file (config files load by path); resolve_paths (relative
               paths from the checkout, then the config file's folder)
  smoke.py     apply_smoke: --smoke's caps
  readers.py   one reader per section: raw section -> its validated dataclass, every
               error line
  loss.py      the `loss` section: the policy objective, where the KL goes
  rules.py     the checks across sections: one ordered list of small named rules
  record.py    config_record: the resolved config as JSON data (config.json)
  migrate.py   an older layout's record read as today's (resume)
  root.py      RunConfig and parse: every reader once, then the rules; ConfigErrors

Importing the package imports no jax (every experiment file imports it, and
`python -m mtrl.train --help` stays fast): `parse` and `RunConfig` load on first use.
"""

from __future__ import annotations

import importlib

from mtrl.training.config.defaults import base_config
from mtrl.training.config.files import module_from_file, resolve_paths
from mtrl.training.config.record import config_record
from mtrl.training.config.smoke import apply_smoke

_LAZY = {"parse": "root", "RunConfig": "root"}
__all__ = ["RunConfig", "apply_smoke", "base_config", "config_record", "module_from_file",
           "parse", "resolve_paths"]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'mtrl.training.config' has no attribute {name!r}")
    return getattr(importlib.import_module(f"mtrl.training.config.{_LAZY[name]}"), name)
