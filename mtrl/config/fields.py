"""Sections of a raw config into validated dataclasses, errors naming the field.

    build(cls, "env", **values)  -> cls(**values), or ValueError("config.env: ...")
    known_fields(cls, section, "env") -> the section as a dict, refusing unknown keys
    check_int / check_number / check_bool(name, value, ...) -> None, or one line
        "<name> must be <requirement>, got <value!r>" (what every __post_init__ raises)
    resolve_path(value, "data.path") -> None for "", else the expanded path, which must
        exist ("config.data.path: path ... does not exist")

Owned here (not by the trainer) so environments, suites and the trainer parse their
own sections the same way without importing each other.
"""

from __future__ import annotations

import dataclasses
import math
import os
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


def _refuse(name: str, requirement: str, value) -> None:
    raise ValueError(f"{name} must be {requirement}, got {value!r}")


def check_int(name: str, value, least: int | None = None, most: int | None = None, *,
              optional: bool = False) -> None:
    """An int (a bool is not one) in [least, most], or None when `optional`.

    Message: "<name> must be an int[ >= least | in [least, most]][ or None], got <value!r>".
    """
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or \
            (least is not None and value < least) or (most is not None and value > most):
        requirement = ("an int" if least is None else f"an int >= {least}" if most is None
                       else f"an int in [{least}, {most}]")
        _refuse(name, requirement + (" or None" if optional else ""), value)


def check_number(name: str, value, least: float | None = None, *, above: float | None = None,
                 finite: bool = False) -> None:
    """An int or float (not a bool; NaN fails every bound) >= least, or > above.

    Message: "<name> must be a [finite ]number[ >= least | > above], got <value!r>".
    """
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and \
        (least is None or value >= least) and (above is None or value > above) and \
        (not finite or math.isfinite(value))
    if not ok:
        bound = (f" >= {least}" if least is not None else "") + \
            (f" > {above}" if above is not None else "")
        _refuse(name, ("a finite number" if finite else "a number") + bound, value)


def check_bool(name: str, value) -> None:
    """True or False (a 0/1 int is not accepted). Message: "<name> must be True or False, got ..."."""
    if not isinstance(value, bool):
        _refuse(name, "True or False", value)


def resolve_path(value: str, field: str, must_exist: bool = True) -> str | None:
    """'' -> None; otherwise an expanded path that must exist (one-line error)."""
    if not value:
        return None
    path = os.path.expanduser(value)
    if must_exist and not os.path.exists(path):
        raise ValueError(f"config.{field}: path {value!r} does not exist")
    return path
