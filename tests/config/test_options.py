"""mtrl/config: one check_choice, every field's error of a section, and the one
ownership mechanism of the registries (an entry's options, the section's union, the
refusal of an option the selected entry does not own)."""

import dataclasses

import pytest

from mtrl.config.fields import ConfigErrors, build_all, check_choice
from mtrl.config.options import (OptionsDecl, refuse_unowned, section_options,
                                 take_options)
from mtrl.registry import Registry


def test_check_choice_names_the_choices_in_one_wording():
    check_choice("mode", "b", ("a", "b"))
    with pytest.raises(ValueError, match=r"^mode must be one of a, b, got 'c'$"):
        check_choice("mode", "c", ("a", "b"))
    registry = Registry("thing")
    registry.register("x")(1)
    with pytest.raises(ValueError, match=r"^kind must be one of x, got 'y'$"):
        check_choice("kind", "y", registry)  # a registry's names
    with pytest.raises(ValueError, match="got True"):
        check_choice("lag", True, (0, 1))  # a bool is no int choice
    with pytest.raises(ValueError, match=r"got \['a'\]"):
        check_choice("mode", ["a"], ("a", "b"))  # unhashable: refused, not a TypeError


@dataclasses.dataclass(frozen=True)
class Section:
    steps: int = 1
    mode: str = "a"
    low: float = 0.0
    high: float = 1.0

    def __post_init__(self):
        if self.steps < 1:
            raise ValueError(f"steps must be >= 1, got {self.steps}")
        check_choice("mode", self.mode, ("a", "b"))
        if self.low > self.high:
            raise ValueError(f"need low <= high, got {self.low} > {self.high}")


def test_build_all_reports_every_refused_field():
    built, lines = build_all(Section, "s", steps=0, mode="z", low=0.5)
    assert built is None
    assert lines == ["config.s.steps: must be >= 1, got 0",
                     "config.s.mode: must be one of a, b, got 'z'"]
    built, lines = build_all(Section, "s", low=2.0)  # a rule naming no single field
    assert built is None and lines == ["config.s: need low <= high, got 2.0 > 1.0"]
    assert build_all(Section, "s", steps=3) == (Section(steps=3), [])
    error = ConfigErrors(["a: x", "b: y"])
    assert str(error) == "a: x\nb: y" and isinstance(error, ValueError)


@dataclasses.dataclass(frozen=True)
class First:
    shared: float = 0.1
    only_first: int = 3
    named: float = 2.0


@dataclasses.dataclass(frozen=True)
class Second:
    shared: float = 0.2
    turns: int = 1


ENTRIES = {"first": OptionsDecl(First, {"named": "first_named"}),
           "second": OptionsDecl(Second, context=("turns",))}


def test_the_section_is_the_union_with_common_defaults_or_unset():
    assert section_options(ENTRIES) == {"shared": None, "only_first": 3, "first_named": 2.0}


def test_an_option_the_selected_entry_does_not_own_is_refused():
    values = {"shared": 0.5, "only_first": 4, "first_named": 2.0}
    assert refuse_unowned("sec", "pick", "first", values, ENTRIES) == []
    assert refuse_unowned("sec", "pick", "second", values, ENTRIES) == [
        "config.sec.only_first: set to 4, but only first reads it and sec.pick is 'second'; "
        "leave it unset"]
    # At its section default (or unset) an option is not "set", whoever owns it.
    assert refuse_unowned("sec", "pick", "second", {"only_first": 3, "first_named": None},
                          ENTRIES) == []


def test_the_selected_entry_takes_its_values_its_defaults_and_the_context():
    defaults = section_options(ENTRIES)
    assert take_options(ENTRIES["first"], {"shared": None, "first_named": 5.0}, defaults) == \
        First(shared=0.1, named=5.0)  # unset: the entry's own default
    assert take_options(ENTRIES["second"], {"shared": 0.3}, defaults, {"turns": 4}) == \
        Second(shared=0.3, turns=4)
    with pytest.raises(ValueError, match="no fields"):
        OptionsDecl(First, {"missing": "x"})
