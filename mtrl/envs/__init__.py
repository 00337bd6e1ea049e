"""Environments: the protocol the rollout generator drives, code environments and the sandbox.

ENVIRONMENTS maps a name to an Environment factory taking that environment's config.
"""

from mtrl.envs.base import Environment, StepResult
from mtrl.registry import Registry

ENVIRONMENTS: Registry = Registry("environment")


def _code_env(config=None, **kwargs):
    from mtrl.envs.code import CodeEnv, CodeEnvConfig  # heavy: loads the sandbox lazily
    return CodeEnv(config or CodeEnvConfig(), **kwargs)


ENVIRONMENTS.register("code")(_code_env)


def _math_env(config=None, **kwargs):
    from mtrl.envs.math import MathEnv, MathEnvConfig
    return MathEnv(config or MathEnvConfig(), **kwargs)


def _tool_env(config=None, **kwargs):
    from mtrl.envs.tool import ToolEnv, ToolEnvConfig  # the sandbox starts on first call
    return ToolEnv(config or ToolEnvConfig(), **kwargs)


ENVIRONMENTS.register("math")(_math_env)
ENVIRONMENTS.register("tool")(_tool_env)

__all__ = ["ENVIRONMENTS", "Environment", "StepResult"]
