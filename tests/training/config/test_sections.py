"""Typed config sections (sft, model, data): validated once, one-line errors naming
the field, frozen values the trainer reads instead of the raw config."""

import dataclasses

import ml_collections
import pytest

from mtrl.training.config import base_config, parse
from mtrl.training.config.readers import read_plain


def test_sections_from_the_base_config():
    c = base_config()
    run = parse(c)
    sft, model, data = run.sft, run.model, run.data
    assert sft.steps == c.sft.steps and model.preset == c.model.preset
    assert data.name == c.data.name and data.test_split == ""
    with pytest.raises(dataclasses.FrozenInstanceError):
        sft.steps = 3


def test_per_agent_lists_become_tuples():
    c = base_config()
    c.sft = dict(c.sft.to_dict(), revision_fraction=[1.0, 0.5],
                 first_phase=["revisions", "first_turn"])
    sft, lines = read_plain(c, "sft")
    assert lines == []
    assert sft.revision_fraction == (1.0, 0.5)
    assert sft.first_phase == ("revisions", "first_turn")


@pytest.mark.parametrize("section,values,message", [
    ("sft", dict(steps=0), "config.sft.steps: must be an int >= 1"),
    ("sft", dict(enabled="yes"), "config.sft.enabled: must be True or False"),
    ("sft", dict(revision_fraction="half"), "config.sft.revision_fraction: must be a number"),
    ("sft", dict(stepz=3), "config.sft.stepz: no such field; valid: "),
    ("model", dict(dtype=16), "config.model.dtype: must be a string"),
    ("model", dict(preset_name="x"), "config.model.preset_name: no such field; valid: "),
])
def test_bad_sections_are_one_line(section, values, message):
    c = base_config()
    raw = c[section].to_dict()
    raw.update(values)
    c[section] = ml_collections.ConfigDict(raw)
    built, lines = read_plain(c, section)
    assert len(lines) == 1 and lines[0].startswith(message), lines


def test_every_bad_field_of_a_section_at_once():
    c = base_config()
    c.sft = dict(c.sft.to_dict(), steps=0, enabled="yes", max_len=1)
    built, lines = read_plain(c, "sft")
    assert built is None
    assert [line.split(":")[0] for line in lines] == [
        "config.sft.enabled", "config.sft.steps", "config.sft.max_len"], lines
