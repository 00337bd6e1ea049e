"""The environment registry's `reads` trait: an `env` field set away from its default
that the selected environment does not read is refused when the config is parsed, in
one line naming the field (it used to be ignored silently)."""

import pytest

from mtrl.envs.registry import (COMMON_FIELDS, ENV_BUILDERS, SECTION_FIELDS, EnvBuilder,
                                EnvRequest, EnvSection, load_builders)
from mtrl.training.config import base_config, parse
from tests.envs.math.smoke import load_config, minimal


def config_of(env_name: str):
    if env_name == "code":
        return base_config()
    if env_name == "textworld":
        return load_config("textworld")
    return minimal(env_name)


@pytest.mark.parametrize("env_name, field, value", [
    ("math", "sandbox_slice", 3),
    ("math", "expert", "reference"),
    ("math", "workers", 4),
    ("tool", "feedback_mode", "plain"),
    ("tool", "end_on_success", True),
    ("textworld", "templates", "default"),
    ("textworld", "reward_points", {"syntax": 0.5}),
])
def test_a_field_the_environment_does_not_read_is_refused(no_work, env_name, field, value):
    c = config_of(env_name)
    c.env[field] = value
    with pytest.raises(ValueError) as error:
        parse(c)
    message = str(error.value)
    assert message.startswith(f"config.env.{field}: set to {value!r}, but env {env_name!r} "
                              "does not read it")
    assert "\n" not in message


@pytest.mark.parametrize("env_name", ["code", "math", "tool", "textworld"])
def test_fields_left_at_their_defaults_pass(no_work, env_name):
    c = config_of(env_name)
    for field in SECTION_FIELDS - COMMON_FIELDS:  # explicitly set to the default
        c.env[field] = getattr(EnvSection(), field)
    assert parse(c).env.name == env_name


class RecordingSection:
    """An EnvSection that notes every field a builder reads."""

    def __init__(self, section: EnvSection):
        self.section, self.seen = section, set()

    def __getattr__(self, field):
        self.seen.add(field)
        return getattr(self.section, field)


class NoPool:
    def __init__(self, **kwargs):
        pass

    def close(self):
        pass


@pytest.mark.parametrize("env_name", ["code", "math", "tool", "textworld"])
def test_a_builder_reads_exactly_the_fields_it_declares(monkeypatch, env_name):
    """Declared but unread would let a mis-set field pass silently; read but undeclared
    would refuse a field the environment uses."""
    from mtrl.data.suite import DataConfig, build_suite
    from mtrl.training.config.readers import env_section
    load_builders()
    for module in ("mtrl.envs.code.builder", "mtrl.envs.tool.builder"):
        monkeypatch.setattr(f"{module}.SandboxPool", NoPool)  # no worker processes
    c = config_of(env_name)
    suite = None if env_name == "textworld" else build_suite(DataConfig(**c.data.to_dict()), 0)
    section = RecordingSection(env_section(c))
    entry = ENV_BUILDERS.get(env_name)
    built = entry.build(EnvRequest(section, c.rollout.num_turns, c.data.name, suite, None))
    entry.ends_on_success(section)
    built.env.close()
    assert section.seen - COMMON_FIELDS == entry.reads


def test_a_builder_that_reads_an_unknown_field_is_refused():
    with pytest.raises(ValueError, match=r"\['sandbox_slices'\] are no EnvSection fields"):
        EnvBuilder(build=lambda request: None, reads=frozenset({"sandbox_slices"}))
