"""`env.name = "code"`: the code environment over a code suite, with its sandbox pool
and (for the expert_edits feedback mode) the configured expert."""

from __future__ import annotations

from mtrl.envs.code.env import CodeEnv, CodeEnvConfig
from mtrl.envs.code.rewards import CodeRewardConfig
from mtrl.envs.code.experts.factory import build_expert
from mtrl.envs.sandbox import Limits, SandboxPool
from mtrl.config import build, known_fields
from mtrl.envs.registry import (COMMON_FIELDS, SECTION_FIELDS, BuiltEnv, EnvRequest,
                                EnvSection, register_env)


def _ends_on_success(section: EnvSection) -> bool:
    return section.end_on_success  # CodeEnvConfig.end_on_success, below


@register_env("code", reads=tuple(SECTION_FIELDS - COMMON_FIELDS),  # every env.* field
              ends_on_success=_ends_on_success)
def build_code_env(request: EnvRequest) -> BuiltEnv:
    e = request.env
    if e.options:
        raise ValueError("config.env.options: the code environment takes no options "
                         "(its fields are env.*)")
    try:
        templates = request.suite.templates(e.templates)
    except ValueError as error:
        raise ValueError(f"config.env.templates: {error}") from None
    limits = build(Limits, "env.wall_s_per_test", wall_s_per_test=e.wall_s_per_test)
    points = known_fields(CodeRewardConfig, e.reward_points, "env.reward_points")
    env_config = build(CodeEnvConfig, "env", num_agents=e.num_agents,
                       feedback_mode=e.feedback_mode, sandbox_slice=e.sandbox_slice,
                       history_mode=e.history_mode, reward=e.reward, limits=limits,
                       reward_config=build(CodeRewardConfig, "env.reward_points", **points),
                       feedback_style=e.feedback_style, templates=templates,
                       end_on_success=e.end_on_success)
    pool = SandboxPool(num_workers=e.workers or None, limits=limits)
    try:  # env.expert: who answers the expert_edits feedback mode (experts/factory.py)
        # This environment also serves validation and test episodes: an expert may read
        # the solutions of the train split only.
        train = request.suite.tasks("train") if e.expert else ()
        expert = build_expert(e.expert, dict(e.expert_options), request.tokenizer,
                              train_tasks=train)
        return BuiltEnv(CodeEnv(env_config, sandbox=pool, expert=expert), pool)
    except ValueError:
        pool.close()
        raise
