"""Options owned by registry entries: one mechanism for estimators, losses and
environments.

Each entry of an owning registry (credit estimators, policy losses, environments)
declares `options`, a frozen dataclass of the config fields it reads with its own
defaults (a field named differently in the config is mapped by the entry's
`config_names`; fields the run fills from another section are its `context`). A
config section holds the union of its entries' options:

    section_options(entries)   {config field: default}: the owners' common default,
                               or None ("the selected entry's own") where they differ
    refuse_unowned(...)        one line per field set away from that default which the
                               selected entry does not own (it would be ignored)
    take_options(...)          the selected entry's options object from the section
                               (None: its own default; context: the run's values)

so no option is silently ignored under any registry, and adding an entry with new
options needs no edit of the section.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Mapping


@dataclasses.dataclass(frozen=True)
class OptionsDecl:
    """What an entry declares: its options type, the config names of fields named
    differently in the config ({option field: config field}) and the option fields
    the run fills from another section (not config fields of this one)."""

    options: type
    config_names: Mapping[str, str] = dataclasses.field(default_factory=dict)
    context: tuple[str, ...] = ()

    def __post_init__(self):
        if not (isinstance(self.options, type) and dataclasses.is_dataclass(self.options)):
            raise ValueError(f"options must be a dataclass type, got {self.options!r}")
        names = {f.name for f in dataclasses.fields(self.options)}
        unknown = sorted((set(self.config_names) | set(self.context)) - names)
        if unknown:
            raise ValueError(f"options {self.options.__name__} has no fields {unknown}")

    def fields(self) -> dict[str, dataclasses.Field]:
        """{config field: the option's dataclass field} (context fields left out)."""
        return {self.config_names.get(f.name, f.name): f
                for f in dataclasses.fields(self.options) if f.name not in self.context}


def field_default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    raise ValueError(f"option field {f.name!r} has no default")


def field_type(owner: type, name: str) -> type | None:
    """The plain type of a dataclass field (float for `float | None`), or None."""
    hints = typing.get_type_hints(owner)
    hint = hints.get(name)
    args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    return args[0] if isinstance(args[0], type) else None


def section_options(entries: Mapping[str, OptionsDecl]) -> dict[str, Any]:
    """{config field: default} over every entry's options (module docstring); a field
    whose owners disagree on the default is None."""
    out: dict[str, Any] = {}
    seen: set[str] = set()
    for decl in entries.values():
        for name, f in decl.fields().items():
            default = field_default(f)
            if name not in seen:
                out[name], seen = default, seen | {name}
            elif out[name] != default:
                out[name] = None
    return out


def owners(entries: Mapping[str, OptionsDecl], field: str) -> list[str]:
    return sorted(n for n, decl in entries.items() if field in decl.fields())


def refuse_unowned(section: str, selector: str, selected: str, values: Mapping[str, Any],
                   entries: Mapping[str, OptionsDecl]) -> list[str]:
    """One line per option in `values` set away from its section default that the
    selected entry (`selector` = `selected`) does not own."""
    defaults = section_options(entries)
    owned = set(entries[selected].fields()) if selected in entries else set()
    lines = []
    for field in sorted(set(values) & set(defaults) - owned):
        if values[field] is not None and values[field] != defaults[field]:
            who = ", ".join(owners(entries, field))
            lines.append(f"config.{section}.{field}: set to {values[field]!r}, but only "
                         f"{who} read{'s' if ',' not in who else ''} it and "
                         f"{section}.{selector} is {selected!r}; leave it unset")
    return lines


def take_options(decl: OptionsDecl, values: Mapping[str, Any],
                 defaults: Mapping[str, Any] | None = None,
                 context: Mapping[str, Any] | None = None) -> Any:
    """The entry's options object: each owned config field's value, where a None the
    section's default is None (unset) takes the option's own default; the context
    fields come from `context`."""
    kwargs = {}
    for name, f in decl.fields().items():
        if name not in values:
            continue
        unset = values[name] is None and (defaults is None or defaults.get(name) is None)
        if not unset:
            kwargs[f.name] = values[name]
    for name in decl.context:
        if context is not None and context.get(name) is not None:
            kwargs[name] = context[name]
    return decl.options(**kwargs)


def option_names(entries: Mapping[str, OptionsDecl]) -> frozenset[str]:
    return frozenset(name for decl in entries.values() for name in decl.fields())


