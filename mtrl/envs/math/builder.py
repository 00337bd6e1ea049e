"""`env.name = "math"`: the math environment over a math suite (gsm8k, calc, arith).
Its options (MathEnvOptions): env.feedback_mode (unary | correctness | plain |
direction), env.history_mode (full | last), env.templates ("default") and
env.max_completion_chars. It runs no sandbox."""

from __future__ import annotations

import dataclasses

from mtrl.config import build
from mtrl.config.fields import check_choice, check_int
from mtrl.envs.math.env import (MATH_HISTORY_MODES, MAX_MATH_COMPLETION_CHARS, MathEnv,
                                MathEnvConfig)
from mtrl.envs.math.prompts import MATH_FEEDBACK
from mtrl.envs.math.task import MathTask
from mtrl.envs.registry import BuiltEnv, EnvRequest, register_env


@dataclasses.dataclass(frozen=True)
class MathEnvOptions:
    feedback_mode: str = "unary"
    history_mode: str = "full"
    templates: str = "default"
    max_completion_chars: int = MAX_MATH_COMPLETION_CHARS

    def __post_init__(self):
        check_choice("feedback_mode", self.feedback_mode, MATH_FEEDBACK)
        check_choice("history_mode", self.history_mode, MATH_HISTORY_MODES)
        check_int("max_completion_chars", self.max_completion_chars, 1)


# An episode ends at its answer (the default ends_on_success).
@register_env("math", options=MathEnvOptions, plays=MathTask)
def build_math_env(request: EnvRequest) -> BuiltEnv:
    e = request.env.options
    try:
        templates = request.suite.templates(e.templates)
    except (ValueError, AttributeError) as error:
        raise ValueError(f"config.env.templates: {error}") from None
    config = build(MathEnvConfig, "env", num_agents=request.env.num_agents,
                   feedback_mode=e.feedback_mode, history_mode=e.history_mode,
                   templates=templates, max_completion_chars=e.max_completion_chars)
    return BuiltEnv(MathEnv(config))
