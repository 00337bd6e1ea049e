"""The environment registry: `env.name` picks a builder that turns the run's typed
`env` section into an Environment (and the sandbox pool it owns, if any). It lives with
the environments (not the trainer), so no environment imports the trainer to register
itself, and no environment reads the raw experiment config.

    builder(request: EnvRequest) -> BuiltEnv

Builders register under a name in ENV_BUILDERS with `register_env`, which records the
environment's traits beside its builder:

  options          its options dataclass: the env.* fields it reads, with its own
                   defaults (the config's env section holds every environment's
                   options, mtrl/config/options.py; one set away from its default for
                   another environment is refused at parse time, not ignored)
  config_names     {option field: env.* field} where the config names one differently
  plays            the task type(s) it plays; the run's suite declares its own
                   (TaskSuite.task_type) and a mismatch is refused in one line
  ends_on_success  options -> whether a step that solves the task ends the episode

Each environment package registers its own (`mtrl/envs/<name>/builder.py`, named in
ENV_BUILDERS' `modules` and imported on the registry's first read, mtrl/registry.py). A builder reads only the request: its EnvSection (name, num_agents
and the typed options), the rollout's number of turns, the data suite's name, the
suite and the tokenizer; it raises ValueError naming the field, and
`build_environment` prefixes "config.env" where the message does not already name one.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from mtrl.config.fields import check_choice, check_int
from mtrl.config.options import OptionsDecl
from mtrl.rollout.environment import Environment
from mtrl.registry import Registry


@dataclasses.dataclass(frozen=True)
class EnvSection:
    """The typed `env` section: the environment's name, the number of agents (every
    environment's; parse gives it to the rollout section too) and the selected
    environment's options object (None: its defaults)."""

    name: str = "code"  # a builder in ENV_BUILDERS
    num_agents: int = 2
    options: Any = None

    def __post_init__(self):
        check_int("num_agents", self.num_agents, 1)
        check_env_name(self.name)
        entry = ENV_BUILDERS.get(self.name)
        if self.options is None:
            object.__setattr__(self, "options", entry.options())
        elif not isinstance(self.options, entry.options):
            raise ValueError(f"options of env {self.name!r} must be "
                             f"{entry.options.__name__}, got {type(self.options).__name__}")

    @classmethod
    def of(cls, name: str = "code", num_agents: int = 2, **options) -> "EnvSection":
        """The section with `options` (fields of the environment's options type)."""
        check_env_name(name)
        return cls(name, num_agents, ENV_BUILDERS.get(name).options(**options))

    @property
    def ends_on_success(self) -> bool:
        """Whether the environment it builds ends an episode at its first success."""
        return bool(ENV_BUILDERS.get(self.name).ends_on_success(self.options))


@dataclasses.dataclass(frozen=True)
class EnvRequest:
    env: EnvSection
    num_turns: int  # rollout.num_turns
    data_name: str  # data.name: the suite the environment plays
    suite: Any  # the task suite (mtrl.data.suite.TaskSuite)
    tokenizer: Any


@dataclasses.dataclass
class BuiltEnv:
    env: Environment
    pool: Any = None  # a SandboxPool the environment uses, closed with it

    def close(self) -> None:
        self.env.close()
        if self.pool is not None:
            self.pool.close()


def _always(options) -> bool:
    del options
    return True


@dataclasses.dataclass(frozen=True)
class EnvBuilder:
    """A registered environment: its builder and its traits (module docstring)."""

    build: Callable[[EnvRequest], BuiltEnv]
    options: type
    plays: tuple[type, ...]
    ends_on_success: Callable[[Any], bool] = _always
    config_names: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        plays = self.plays if isinstance(self.plays, tuple) else (self.plays,)
        if not plays or not all(isinstance(t, type) for t in plays):
            raise ValueError(f"EnvBuilder.plays must be a task type or a tuple of them, "
                             f"got {self.plays!r}")
        object.__setattr__(self, "plays", plays)
        self.options_decl  # a dataclass whose fields the config names map

    @property
    def options_decl(self) -> OptionsDecl:
        return OptionsDecl(self.options, dict(self.config_names))


# One module per environment package, whose import registers its builder.
ENV_BUILDERS: Registry[EnvBuilder] = Registry("environment builder", modules=(
    "mtrl.envs.code.builder",
    "mtrl.envs.math.builder",
    "mtrl.envs.tool.builder",
    "mtrl.envs.textworld.builder",
    "mtrl.envs.openenv.builder",
    "mtrl.envs.guess.builder",
))


def register_env(name: str, *, options: type, plays: type | tuple[type, ...],
                 ends_on_success: Callable[[Any], bool] = _always,
                 config_names: Mapping[str, str] | None = None):
    """Decorator: registers `build` under `name` with the environment's traits (module
    docstring; ends_on_success(options), default: every episode ends at its first
    success)."""

    def add(build: Callable[[EnvRequest], BuiltEnv]) -> Callable[[EnvRequest], BuiltEnv]:
        ENV_BUILDERS.register(name)(EnvBuilder(build, options, plays, ends_on_success,
                                               dict(config_names or {})))
        return build

    return add


def env_options() -> dict[str, OptionsDecl]:
    """{environment: its options declaration}: the env section's owned fields."""
    return {n: ENV_BUILDERS.get(n).options_decl for n in ENV_BUILDERS.names()}


def check_env_name(name: str) -> None:
    check_choice("name", name, ENV_BUILDERS)


def check_plays(section: EnvSection, data_name: str, task_type: type | None) -> None:
    """One line unless the suite's declared task type is one the environment plays."""
    plays = ENV_BUILDERS.get(section.name).plays
    names = " or ".join(t.__name__ for t in plays)
    if task_type is None:
        raise ValueError(f"config.data.name: suite {data_name!r} declares no task_type "
                         f"(TaskSuite.task_type); env {section.name!r} plays {names} tasks")
    if not issubclass(task_type, plays):
        fitting = [n for n in ENV_BUILDERS.names()
                   if issubclass(task_type, ENV_BUILDERS.get(n).plays)]
        raise ValueError(f"config.env.name: env {section.name!r} plays {names} tasks, but "
                         f"suite {data_name!r} has {task_type.__name__} tasks "
                         f"(environments for them: {', '.join(fitting) or 'none'})")


def build_environment(section: EnvSection, num_turns: int, data_name: str, suite,
                      tokenizer) -> BuiltEnv:
    check_env_name(section.name)
    check_plays(section, data_name, getattr(suite, "task_type", None))
    try:
        return ENV_BUILDERS.get(section.name).build(
            EnvRequest(section, num_turns, data_name, suite, tokenizer))
    except ValueError as e:
        message = " ".join(str(e).split())
        raise ValueError(message if message.startswith("config.")
                         else f"config.env: {message}") from None
