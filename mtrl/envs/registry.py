"""The environment registry: `env.name` picks a builder that turns the run's typed
`env` section into an Environment (and the sandbox pool it owns, if any). It lives with
the environments (not the trainer), so no environment imports the trainer to register
itself, and no environment reads the raw experiment config.

    builder(request: EnvRequest) -> BuiltEnv

Builders register under a name in ENV_BUILDERS with `register_env`, which records the
environment's traits beside its builder: `reads`, the EnvSection fields it reads (a
field another environment reads, set away from its default, is refused at parse time
by check_env_fields instead of being ignored), and `ends_on_success(section)`, whether
the built environment ends an episode at its first success (the config checks read
it before anything is built); each environment package registers its own
(`mtrl/envs/<name>/builder.py`, imported by `load_builders`). A builder reads only
the request: its EnvSection (`env.*`, `env.options` for the environment's extras), the
rollout's number of turns, the data suite's name, the suite and the tokenizer; it raises
ValueError naming the field, and `build_environment` prefixes "config.env" where the
message does not already name a field.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable

from mtrl.config.fields import check_bool, check_int
from mtrl.rollout.environment import Environment
from mtrl.registry import Registry


@dataclasses.dataclass(frozen=True)
class EnvSection:
    """The `env` section, read once (mtrl/training/config/readers.py env_section). The
    fields after `options` are the code environment's; another environment reads the
    ones its registration names (`reads`) and `options` for its own extras, and refuses
    the rest when they are set (check_env_fields)."""

    name: str = "code"  # a builder in ENV_BUILDERS
    options: dict = dataclasses.field(default_factory=dict)  # the environment's extras
    num_agents: int = 2
    feedback_mode: str = "level_feedback"
    sandbox_slice: int = 1
    history_mode: str = "full"
    reward: str = "level"
    templates: str = "tiny"
    reward_points: dict = dataclasses.field(default_factory=dict)
    feedback_style: str = "compact"
    workers: int = 0  # sandbox workers (0: the pool's default)
    wall_s_per_test: float = 2.0
    expert: str = ""
    expert_options: dict = dataclasses.field(default_factory=dict)
    # Code environment only: a program passing every test ends its episode. Math, tool
    # and TextWorld always end at success (an answer, a win); they refuse the field.
    end_on_success: bool = False

    def __post_init__(self):
        check_int("num_agents", self.num_agents, 1)
        check_bool("end_on_success", self.end_on_success)


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


def _always(section: EnvSection) -> bool:
    del section
    return True


# Read for every environment: the registry's key, the environment's own extras and
# the number of agents (parse gives it to the rollout section, whatever the builder).
COMMON_FIELDS = frozenset({"name", "options", "num_agents"})
SECTION_FIELDS = frozenset(f.name for f in dataclasses.fields(EnvSection))


@dataclasses.dataclass(frozen=True)
class EnvBuilder:
    """A registered environment: its builder and its traits (`reads`: the EnvSection
    fields it reads besides COMMON_FIELDS)."""

    build: Callable[[EnvRequest], BuiltEnv]
    reads: frozenset
    ends_on_success: Callable[[EnvSection], bool] = _always

    def __post_init__(self):
        unknown = sorted(set(self.reads) - SECTION_FIELDS)
        if unknown:
            raise ValueError(f"EnvBuilder.reads: {unknown} are no EnvSection fields")


ENV_BUILDERS: Registry[EnvBuilder] = Registry("environment builder")


def register_env(name: str, *, reads: tuple[str, ...],
                 ends_on_success: Callable[[EnvSection], bool] = _always):
    """Decorator: registers `build` under `name` with the environment's traits
    (`reads`: the EnvSection fields it reads besides name, options and num_agents;
    ends_on_success(section), default: every episode ends at its first success)."""

    def add(build: Callable[[EnvRequest], BuiltEnv]) -> Callable[[EnvRequest], BuiltEnv]:
        ENV_BUILDERS.register(name)(EnvBuilder(build, frozenset(reads), ends_on_success))
        return build

    return add

# Modules whose import registers a builder; one line per environment package.
BUILDER_MODULES = (
    "mtrl.envs.code.builder",
    "mtrl.envs.math.builder",
    "mtrl.envs.tool.builder",
    "mtrl.envs.textworld.builder",
    "mtrl.envs.openenv.builder",
)


def load_builders() -> None:
    for module in BUILDER_MODULES:
        importlib.import_module(module)


def check_env_name(section: EnvSection) -> None:
    load_builders()
    if section.name not in ENV_BUILDERS:
        raise ValueError(f"config.env.name: unknown {section.name!r}; valid: "
                         f"{', '.join(ENV_BUILDERS.names())}")


def check_env_fields(section: EnvSection) -> None:
    """One-line error for an `env` field set away from its default that the selected
    environment does not read (it would be ignored silently: the user meant another
    environment, or a field of env.options)."""
    check_env_name(section)
    reads = ENV_BUILDERS.get(section.name).reads | COMMON_FIELDS
    defaults = EnvSection()
    for field in sorted(SECTION_FIELDS - reads):
        value = getattr(section, field)
        if value != getattr(defaults, field):
            raise ValueError(
                f"config.env.{field}: set to {value!r}, but env {section.name!r} does not "
                f"read it (it reads "
                f"{', '.join(sorted(reads - COMMON_FIELDS)) or 'no other env.* field'} "
                "besides num_agents and env.options); leave it unset")


def ends_on_success(section: EnvSection) -> bool:
    """Whether the environment `section` builds ends an episode at its first success
    (its builder's trait; read by the config checks, before anything is built)."""
    check_env_name(section)
    return ENV_BUILDERS.get(section.name).ends_on_success(section)


def build_environment(section: EnvSection, num_turns: int, data_name: str, suite,
                      tokenizer) -> BuiltEnv:
    check_env_name(section)
    try:
        return ENV_BUILDERS.get(section.name).build(
            EnvRequest(section, num_turns, data_name, suite, tokenizer))
    except ValueError as e:
        message = " ".join(str(e).split())
        raise ValueError(message if message.startswith("config.")
                         else f"config.env: {message}") from None
