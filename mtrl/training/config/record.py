"""The resolved config as plain JSON data: what config.json holds (RunConfig.record),
what checkpoints store and what a resumed run is compared with (run_config.py).

    config_record(config) -> {"seed": 0, "model": {...}, ...}   # tuples become lists
"""

from __future__ import annotations

from typing import Any


def _plain(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def config_record(config) -> dict:
    """The config as plain JSON data (tuples become lists)."""
    return _plain(config)
