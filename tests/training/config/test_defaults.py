"""base_config() is generated from the section dataclasses and the registries' options
(each default written once): the committed table is what generate.py writes today,
and --config.<field>=None reads the embedded default of a field."""

import pathlib

from mtrl.training.config import base_config
from mtrl.training.config.defaults import base_value
from mtrl.training.config.generate import TABLE, table_source
from mtrl.training.config.sections import SPECS, section_defaults


def test_the_table_is_generated_from_the_dataclasses():
    assert pathlib.Path(TABLE).read_text() == table_source(), (
        "a section dataclass or an entry's options changed: run "
        "`python -m mtrl.training.config.generate` and commit defaults_table.py")


def test_base_config_holds_every_section_default():
    c = base_config().to_dict()
    for name in SPECS:
        assert c[name] == section_defaults(name), name
    assert c["seed"] == 0 and c["tokenizer"] == "byte"


def test_the_run_defaults_differ_from_the_library_ones_where_said():
    """A library component's default is not always a run's (sections.py RUN_DEFAULTS)."""
    from mtrl.rollout import RolloutConfig
    assert RolloutConfig().max_new_tokens == 64 and base_value("rollout.max_new_tokens") == 48
    assert base_value("reward.on_dominance") == "raise"
    assert base_value("loss.eps_high") is None  # unset: the selected loss's own (ppo 0.28)


def test_fields_shared_with_different_defaults_are_unset():
    assert base_value("env.feedback_mode") is None  # code: level_feedback, math: unary
    assert base_value("env.sandbox_slice") == 1  # the code environment's alone
