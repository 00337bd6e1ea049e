"""`env.name = "textworld"`: TextWorldEnv over the textworld suite's games; its
options are TextWorldEnvConfig's fields (`env.options`)."""

from __future__ import annotations

from mtrl.envs.textworld.env import TextWorldEnv, TextWorldEnvConfig
from mtrl.config import build
from mtrl.envs.registry import BuiltEnv, EnvRequest, register_env


# An episode ends at a win (the default ends_on_success).
@register_env("textworld", reads=())
def build_textworld_env(request: EnvRequest) -> BuiltEnv:
    e = request.env
    if e.num_agents != 1:
        raise ValueError(f"config.env.num_agents: textworld games have one player, got "
                         f"{e.num_agents}")
    if request.data_name != "textworld":
        raise ValueError(f"config.data.name: env textworld plays the 'textworld' suite's "
                         f"games, got {request.data_name!r}")
    return BuiltEnv(TextWorldEnv(build(TextWorldEnvConfig, "env.options", **e.options)))
