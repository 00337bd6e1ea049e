"""Sections of a raw config into validated dataclasses, errors naming the field.

    build(cls, "env", **values)  -> cls(**values), or ValueError("config.env: ...")
    build_all(cls, "env", **values) -> (cls(**values) or None, every error line): each
        field the class refuses, one line each, not only the first
    known_fields(cls, section, "env") -> the section as a dict, refusing unknown keys
    check_int / check_number / check_bool / check_choice(name, value, ...) -> None, or
        one line "<name> must be <requirement>, got <value!r>" (what every
        __post_init__ raises; check_choice: "must be one of a, b, c")
    resolve_path(value, "data.path") -> None for "", else the expanded path, which must
        exist ("config.data.path: path ... does not exist")

Owned here (not by the trainer) so environments, suites and the trainer parse their
own sections the same way without importing each other.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from typing import Any


class ConfigErrors(ValueError):
    """Every error found in a config, one line each (str: the lines, newline-joined)."""

    def __init__(self, lines):
        self.lines = list(lines)
        super().__init__("\n".join(self.lines))


def build(cls, field: str, **kwargs) -> Any:
    """cls(**kwargs), re-raising validation errors with the config field named."""
    try:
        return cls(**kwargs)
    except (ValueError, TypeError, KeyError) as e:
        raise ValueError(f"config.{field}: {e}") from None


def _named_field(message: str, names) -> tuple[str, str] | None:
    """(field, the rest of the message) when an error opens with one of `names`
    ("steps must be ...", "RolloutConfig.top_k must be ...", "estimator: unknown ...")."""
    match = re.match(r"(?:[A-Z]\w*\.)?(\w+)(?::\s*|\s+)(.*)", message, re.S)
    if match and match.group(1) in names:
        return match.group(1), match.group(2)
    return None


def field_line(section: str, message: str, names) -> str:
    """An error message as one config line, "config.<section>.<name>: ..." when it
    opens with one of `names`, else "config.<section>: <message>"."""
    named = _named_field(message, names)
    return (f"config.{section}.{named[0]}: {named[1]}" if named
            else f"config.{section}: {message}")


def build_all(cls, field: str, **kwargs) -> tuple[Any, list[str]]:
    """(cls(**kwargs), []) or (None, one line per refused field, "config.<field>.<name>:
    <what the class says>"): after each error the field it names goes back to its
    default and the rest is checked again, so every independent error is reported."""
    values, lines, refused = dict(kwargs), [], []
    while True:
        try:
            built = cls(**values)
        except (ValueError, TypeError, KeyError) as e:
            message = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
            named = _named_field(message, values)
            # An error that mentions a field already refused (now at its default) is the
            # substitution's consequence, not the user's: checked on, not reported.
            if not (lines and named and _mentions(message, refused, named[0])):
                lines.append(field_line(field, message, values))
            if named is None:
                return None, lines
            refused.append(named[0])
            del values[named[0]]
            continue
        return (built if not lines else None), lines


def _mentions(message: str, names: list[str], own: str) -> bool:
    """Whether `message` names one of `names` (other than `own`) as a whole word."""
    return any(re.search(rf"\b{re.escape(n)}\b", message) for n in names if n != own)


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


def check_choice(name: str, value, valid) -> None:
    """`value` is one of the names `valid` (a tuple, or a Registry: its names).

    Message: "<name> must be one of a, b, c, got <value!r>"."""
    names = tuple(valid.names()) if hasattr(valid, "names") else tuple(valid)
    try:  # a bool is no int choice (True == 1)
        ok = value in names and (not isinstance(value, bool)
                                 or any(isinstance(n, bool) for n in names))
    except TypeError:  # an unhashable value (a list from the command line)
        ok = False
    if not ok:
        _refuse(name, "one of " + ", ".join(str(n) for n in names), value)


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
