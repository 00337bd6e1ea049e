"""`env.name = "math"`: the math environment over a math suite (gsm8k).

Reads env.num_agents, env.feedback_mode (unary | correctness | plain | direction),
env.history_mode (full | last) and env.templates ("default"); env.options may set
`max_completion_chars`. It runs no sandbox."""

from __future__ import annotations

from mtrl.envs.math.env import MathEnv, MathEnvConfig
from mtrl.config import build
from mtrl.envs.registry import BuiltEnv, EnvRequest, register_env

_OPTIONS = ("max_completion_chars",)


# An episode ends at its answer (the default ends_on_success).
@register_env("math", reads=("feedback_mode", "history_mode", "templates"))
def build_math_env(request: EnvRequest) -> BuiltEnv:
    e = request.env
    options = dict(e.options)
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise ValueError(f"config.env.options: unknown {unknown} for the math environment; "
                         f"valid: {list(_OPTIONS)}")
    try:
        templates = request.suite.templates(e.templates)
    except (ValueError, AttributeError) as error:
        raise ValueError(f"config.env.templates: {error}") from None
    if not hasattr(templates, "try_again"):
        raise ValueError(f"config.data.name: the math environment needs a math suite "
                         f"(gsm8k), got {request.data_name!r}")
    config = build(MathEnvConfig, "env", num_agents=e.num_agents,
                   feedback_mode=e.feedback_mode, history_mode=e.history_mode,
                   templates=templates, **options)
    return BuiltEnv(MathEnv(config))
