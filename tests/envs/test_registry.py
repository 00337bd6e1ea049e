"""The environment registry, over every registered environment: each declares its options
(the env.* fields it owns, with its defaults) and the task types it plays; an option of
another environment set away from its default is refused when the config is parsed, in
one line naming the field (it used to be ignored silently); a builder reads the options
it declares; a suite of a task type the environment does not play is refused before
anything is built."""

import dataclasses
import types

import pytest

from mtrl.config.options import OptionsDecl, field_default, section_options
from mtrl.envs.registry import (ENV_BUILDERS, EnvBuilder, EnvRequest, EnvSection,
                                build_environment, env_options)
from mtrl.training.config import base_config, module_from_file, parse
from tests.conftest import ROOT
from tests.envs.math.smoke import load_config, minimal

ENVS = ENV_BUILDERS.names()
CONFIGS = {"code": base_config, "textworld": lambda: load_config("textworld"),
           "math": lambda: minimal("math"), "tool": lambda: minimal("tool"),
           "openenv": lambda: module_from_file(ROOT / "experiments" / "configs" /
                                               "openenv.py").get_config()}


def config_of(env_name: str):
    """An experiment config of the environment (a new one: the default's, renamed)."""
    if env_name in CONFIGS:
        return CONFIGS[env_name]()
    c = base_config()
    c.env.name = env_name
    return c


@pytest.mark.parametrize("env_name", ENVS)
def test_every_environment_declares_its_traits(env_name):
    entry = ENV_BUILDERS.get(env_name)
    assert isinstance(entry.options_decl, OptionsDecl)
    options = entry.options()  # every option has its default
    assert dataclasses.is_dataclass(options) and hash(type(options))
    assert entry.plays and all(isinstance(t, type) for t in entry.plays)
    assert isinstance(entry.ends_on_success(options), bool)
    assert EnvSection(env_name, 1).options == options


def foreign_option(env_name: str):
    """(field, value): an option another environment owns and this one does not, set to
    a value unlike its section default."""
    entries = env_options()
    own = set(entries[env_name].fields())
    defaults = section_options(entries)
    for other in ENVS:
        for field, f in entries[other].fields().items():
            if field not in own:
                default = field_default(f)
                value = ({"x": 1} if isinstance(default, dict) else (not default)
                         if isinstance(default, bool) else 7 if isinstance(default, int)
                         else 0.5 if isinstance(default, float) else "other")
                if value != defaults[field]:
                    return field, value, other
    pytest.skip(f"env {env_name!r} owns every option")


@pytest.mark.parametrize("env_name", ENVS)
def test_an_option_of_another_environment_is_refused(no_work, env_name):
    field, value, owner = foreign_option(env_name)
    c = config_of(env_name)
    c.env[field] = value
    with pytest.raises(ValueError) as error:
        parse(c)
    message = str(error.value)
    assert message.startswith(f"config.env.{field}: set to {value!r}, but only ")
    assert owner in message and f"env.name is {env_name!r}; leave it unset" in message
    assert "\n" not in message


@pytest.mark.parametrize("env_name", ENVS)
def test_options_left_at_their_section_defaults_pass(no_work, env_name):
    c = config_of(env_name)
    own = env_options()[env_name].fields()
    for field, default in section_options(env_options()).items():
        if field not in own:  # explicitly set to the default
            c.env[field] = default
    assert parse(c).env.name == env_name


class Recording:
    """An options object that notes every field a builder reads."""

    def __init__(self, options):
        self.options, self.seen = options, set()

    def __getattr__(self, field):
        self.seen.add(field)
        return getattr(self.options, field)


class NoPool:
    """A stand-in for a sandbox pool or an OpenEnv client: no processes, no server."""

    def __init__(self, *args, **kwargs):
        pass

    def close(self):
        pass


@pytest.mark.parametrize("env_name", ENVS)
def test_a_builder_reads_the_options_it_declares(monkeypatch, env_name):
    """Declared but unread would let a mis-set option pass silently. A builder reads
    every option, or hands the options object on as the environment's config."""
    from mtrl.data.suite import build_suite
    for module in ("mtrl.envs.code.builder", "mtrl.envs.tool.builder"):
        monkeypatch.setattr(f"{module}.SandboxPool", NoPool)  # no worker processes
    # openenv: no server (its /schema names the action field; no session is opened)
    monkeypatch.setattr("mtrl.envs.openenv.builder.action_key_from_schema",
                        lambda url, timeout_s: ("message", ["message"]))
    monkeypatch.setattr("mtrl.envs.openenv.env.EpisodeClient", NoPool)
    monkeypatch.setattr("mtrl.envs.openenv.tasks.server_tasks",  # its task list
                        lambda url, sizes: {"train": [], "validation": [], "test": []})
    c = config_of(env_name)
    run = parse(c)
    suite = None if env_name == "textworld" else build_suite(run.data, 0)
    options = Recording(run.env.options)
    request = EnvRequest(types.SimpleNamespace(name=env_name, num_agents=run.env.num_agents,
                                               options=options),
                         c.rollout.num_turns, c.data.name, suite, None)
    built = ENV_BUILDERS.get(env_name).build(request)
    try:
        fields = {f.name for f in dataclasses.fields(run.env.options)}
        assert options.seen == fields or getattr(built.env, "config", None) is options
    finally:
        built.env.close()


@pytest.mark.parametrize("env_name", ENVS)
def test_a_suite_of_another_task_type_is_refused(no_work, env_name):
    other = type("OtherTask", (), {})
    suite = types.SimpleNamespace(task_type=other)
    with pytest.raises(ValueError) as error:
        build_environment(EnvSection(env_name, 1), 2, "other_suite", suite, None)
    assert str(error.value).startswith(f"config.env.name: env {env_name!r} plays ")
    assert "suite 'other_suite' has OtherTask tasks" in str(error.value)


def test_plays_must_be_task_types():
    with pytest.raises(ValueError, match="plays must be a task type"):
        EnvBuilder(build=lambda request: None, options=types.SimpleNamespace, plays=("x",))


# Folders of mtrl/envs/ that are no environment: the jail the code and tool
# environments run programs in.
NOT_ENVIRONMENTS = {"sandbox"}


def test_every_environment_package_is_listed_loaded_and_installed():
    """Each package under mtrl/envs/ (but the jail) has an __init__.py (find_packages
    drops a folder without one from the wheel), its builder is listed in
    ENV_BUILDERS.modules, loading the registry imports it, and the wheel holds it."""
    from tests.test_wheel_packages import setup_packages
    envs = ROOT / "mtrl" / "envs"
    folders = {p.name for p in envs.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert {"code", "math", "tool", "textworld", "openenv"} <= folders
    assert not [f for f in folders if not (envs / f / "__init__.py").exists()]
    listed = {m: m.split(".")[2] for m in ENV_BUILDERS.modules}
    assert set(listed.values()) == folders - NOT_ENVIRONMENTS
    assert all(m == f"mtrl.envs.{f}.builder" for m, f in listed.items())
    ENV_BUILDERS.load()
    import sys
    assert all(m in sys.modules for m in listed)
    assert {f"mtrl.envs.{f}" for f in folders} <= set(setup_packages())
