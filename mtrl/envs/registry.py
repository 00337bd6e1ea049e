"""The environment registry: `env.name` picks a builder that turns the run's config into
an Environment (and the sandbox pool it owns, if any). It lives with the environments
(not the trainer), so no environment imports the trainer to register itself.

    builder(request: EnvRequest) -> BuiltEnv

Builders register under a name in ENV_BUILDERS; each environment package registers its
own (`mtrl/envs/<name>/builder.py`, imported by `load_builders`). A builder reads only
its own config fields (`config.env.*`, `config.env.options` for the environment's
extras) and raises ValueError naming the field; `build_environment` prefixes
"config.env" where the message does not already name a field.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable

from mtrl.rollout.environment import Environment
from mtrl.registry import Registry


@dataclasses.dataclass(frozen=True)
class EnvRequest:
    config: Any  # the run's ml_collections config (read config.env)
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


ENV_BUILDERS: Registry[Callable[[EnvRequest], BuiltEnv]] = Registry("environment builder")

# Modules whose import registers a builder; one line per environment package.
BUILDER_MODULES = (
    "mtrl.envs.code.builder",
    "mtrl.envs.math.builder",
    "mtrl.envs.tool.builder",
    "mtrl.envs.textworld.builder",
)


def load_builders() -> None:
    for module in BUILDER_MODULES:
        importlib.import_module(module)


def build_environment(config, suite, tokenizer) -> BuiltEnv:
    load_builders()
    name = config.env.get("name", "code")
    if name not in ENV_BUILDERS:
        raise ValueError(f"config.env.name: unknown {name!r}; valid: "
                         f"{', '.join(ENV_BUILDERS.names())}")
    try:
        return ENV_BUILDERS.get(name)(EnvRequest(config, suite, tokenizer))
    except ValueError as e:
        message = " ".join(str(e).split())
        raise ValueError(message if message.startswith("config.")
                         else f"config.env: {message}") from None
