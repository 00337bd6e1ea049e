"""`env.name = "guess"`: the guessing environment over the `guess` suite. Its one
option, env.max_completion_chars, caps the reply text read (the math environment's
default); the texts are the environment's own (GuessTemplates). It runs no sandbox."""

from __future__ import annotations

import dataclasses

from mtrl.config.fields import check_int
from mtrl.envs.guess.env import GuessEnv
from mtrl.envs.guess.task import GuessTask
from mtrl.envs.math.env import MAX_MATH_COMPLETION_CHARS
from mtrl.envs.registry import BuiltEnv, EnvRequest, register_env


@dataclasses.dataclass(frozen=True)
class GuessEnvOptions:
    max_completion_chars: int = MAX_MATH_COMPLETION_CHARS  # env.max_completion_chars

    def __post_init__(self):
        check_int("max_completion_chars", self.max_completion_chars, 1)


# An episode ends at its first right guess (the default ends_on_success).
@register_env("guess", options=GuessEnvOptions, plays=GuessTask)
def build_guess_env(request: EnvRequest) -> BuiltEnv:
    return BuiltEnv(GuessEnv(request.env.num_agents,
                             max_completion_chars=request.env.options.max_completion_chars))
