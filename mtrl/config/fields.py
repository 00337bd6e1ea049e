"""Sections of a raw config into validated dataclasses, errors naming the field.

    build(cls, "env", **values)  -> cls(**values), or ValueError("config.env: ...")
    known_fields(cls, section, "env") -> the section as a dict, refusing unknown keys

Owned here (not by the trainer) so environments, suites and the trainer parse their
own sections the same way without importing each other.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def build(cls, field: str, **kwargs) -> Any:
    """cls(**kwargs), re-raising validation errors with the config field named."""
    try:
        return cls(**kwargs)
    except (ValueError, TypeError, KeyError) as e:
        raise ValueError(f"config.{field}: {e}") from None


def as_dict(section) -> dict:
    """A ConfigDict (or a plain mapping) as a dict."""
    return section.to_dict() if hasattr(section, "to_dict") else dict(section)


def known_fields(cls, section, field: str) -> dict:
    """The section's entries, which must all be fields of `cls`."""
    values = as_dict(section)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ValueError(f"config.{field}: unknown field(s) {unknown}; valid: {sorted(names)}")
    return values
