"""`env.name = "tool"`: tool-integrated reasoning over a math suite (gsm8k, calc) or a
code suite (mbpp, mbpp_sanitized, humaneval), with a sandbox pool, one agent.

Its options (ToolEnvOptions): env.workers and env.wall_s_per_test (the sandbox),
env.templates ("default"), env.max_turns (None: rollout.num_turns),
env.max_output_chars, env.max_completion_chars and env.call_reward."""

from __future__ import annotations

import dataclasses

from mtrl.config import build
from mtrl.config.fields import check_int, check_number
from mtrl.envs.code.task import CodeTask
from mtrl.envs.math.task import MathTask
from mtrl.envs.registry import BuiltEnv, EnvRequest, register_env
from mtrl.envs.sandbox import Limits, SandboxPool
from mtrl.envs.tool.env import ToolEnv, ToolEnvConfig

_DEFAULTS = ToolEnvConfig()


@dataclasses.dataclass(frozen=True)
class ToolEnvOptions:
    workers: int = 0  # sandbox workers (0: the pool's default)
    wall_s_per_test: float = 2.0
    templates: str = "default"
    max_turns: int | None = None  # None: rollout.num_turns
    max_output_chars: int = _DEFAULTS.max_output_chars
    max_completion_chars: int = _DEFAULTS.max_completion_chars
    call_reward: float = _DEFAULTS.call_reward

    def __post_init__(self):
        check_int("workers", self.workers, 0)
        check_number("wall_s_per_test", self.wall_s_per_test, above=0)


# An episode ends at its answer (the default ends_on_success).
@register_env("tool", options=ToolEnvOptions, plays=(MathTask, CodeTask))
def build_tool_env(request: EnvRequest) -> BuiltEnv:
    e = request.env.options
    if request.env.num_agents != 1:
        raise ValueError(f"config.env.num_agents: the tool environment has one agent, "
                         f"got {request.env.num_agents}")
    if e.templates != "default":
        raise ValueError(f"config.env.templates: the tool environment has 'default' "
                         f"templates only, got {e.templates!r}")
    env_config = build(ToolEnvConfig, "env", max_turns=e.max_turns or request.num_turns,
                       max_output_chars=e.max_output_chars,
                       max_completion_chars=e.max_completion_chars, call_reward=e.call_reward)
    if request.num_turns > env_config.max_turns:
        raise ValueError(f"config.env.max_turns: {env_config.max_turns} is below "
                         f"rollout.num_turns={request.num_turns}")
    limits = build(Limits, "env.wall_s_per_test", wall_s_per_test=e.wall_s_per_test,
                   wall_s_total=max(e.wall_s_per_test, Limits().wall_s_total))
    pool = SandboxPool(num_workers=e.workers or None, limits=limits)
    return BuiltEnv(ToolEnv(env_config, sandbox=pool), pool)
