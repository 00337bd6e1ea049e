"""`env.name = "textworld"`: TextWorldEnv over the textworld suite's games; its
options are TextWorldEnvConfig's fields (env.*; its `history` is env.history_mode)."""

from __future__ import annotations

from mtrl.envs.registry import BuiltEnv, EnvRequest, register_env
from mtrl.envs.textworld.env import TextWorldEnv, TextWorldEnvConfig
from mtrl.envs.textworld.games import GameTask


# An episode ends at a win (the default ends_on_success).
@register_env("textworld", options=TextWorldEnvConfig, plays=GameTask,
              config_names={"history": "history_mode"})
def build_textworld_env(request: EnvRequest) -> BuiltEnv:
    if request.env.num_agents != 1:
        raise ValueError(f"config.env.num_agents: textworld games have one player, got "
                         f"{request.env.num_agents}")
    return BuiltEnv(TextWorldEnv(request.env.options))
