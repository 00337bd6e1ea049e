"""`env.name = "tool"`: tool-integrated reasoning over a math suite (gsm8k) or a code
suite (mbpp, mbpp_sanitized, humaneval), with a sandbox pool.

Reads env.num_agents (must be 1), env.workers and env.wall_s_per_test (the sandbox),
env.templates ("default"); env.options: `max_turns` (default rollout.num_turns),
`max_output_chars`, `max_completion_chars`, `call_reward`."""

from __future__ import annotations

from mtrl.envs.sandbox import Limits, SandboxPool
from mtrl.envs.tool.env import ToolEnv, ToolEnvConfig
from mtrl.config import build
from mtrl.envs.registry import BuiltEnv, EnvRequest, register_env

_OPTIONS = ("max_turns", "max_output_chars", "max_completion_chars", "call_reward")


# An episode ends at its answer (the default ends_on_success).
@register_env("tool", reads=("workers", "wall_s_per_test", "templates"))
def build_tool_env(request: EnvRequest) -> BuiltEnv:
    e = request.env
    options = dict(e.options)
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise ValueError(f"config.env.options: unknown {unknown} for the tool environment; "
                         f"valid: {list(_OPTIONS)}")
    if e.num_agents != 1:
        raise ValueError(f"config.env.num_agents: the tool environment has one agent, "
                         f"got {e.num_agents}")
    if e.templates != "default":
        raise ValueError(f"config.env.templates: the tool environment has 'default' "
                         f"templates only, got {e.templates!r}")
    options.setdefault("max_turns", request.num_turns)
    env_config = build(ToolEnvConfig, "env.options", **options)
    if request.num_turns > env_config.max_turns:
        raise ValueError(f"config.env.options.max_turns: {env_config.max_turns} is below "
                         f"rollout.num_turns={request.num_turns}")
    limits = build(Limits, "env.wall_s_per_test", wall_s_per_test=e.wall_s_per_test,
                   wall_s_total=max(e.wall_s_per_test, Limits().wall_s_total))
    pool = SandboxPool(num_workers=e.workers or None, limits=limits)
    return BuiltEnv(ToolEnv(env_config, sandbox=pool), pool)
