"""`env.name = "code"`: the code environment over a code suite, with its sandbox pool
and (for the expert_edits feedback mode) the configured expert. Its options
(CodeEnvOptions) are the env.* fields below, with the code environment's defaults."""

from __future__ import annotations

import dataclasses

from mtrl.config import build, known_fields
from mtrl.config.fields import check_bool, check_choice, check_int, check_number
from mtrl.envs.code.env import HISTORY_MODES, CodeEnv, CodeEnvConfig
from mtrl.envs.code.experts.factory import build_expert
from mtrl.envs.code.feedback import FEEDBACK_MODES, FEEDBACK_STYLES
from mtrl.envs.code.rewards import CODE_REWARDS, CodeRewardConfig
from mtrl.envs.code.task import CodeTask
from mtrl.envs.registry import BuiltEnv, EnvRequest, register_env
from mtrl.envs.sandbox import Limits, SandboxPool


@dataclasses.dataclass(frozen=True)
class CodeEnvOptions:
    """The code environment's env.* options (its CodeEnvConfig and sandbox): the
    feedback mode, sandbox_slice, history mode, reward and its point values
    (CodeRewardConfig fields, {}: the defaults), the suite's templates, the feedback
    style, sandbox workers (0: the pool's default) and wall time per test, the expert
    of expert_edits and its options, and end_on_success (a program passing every test
    ends its episode; False: CoMLRL's fixed horizon, a solved branch keeps revising)."""

    feedback_mode: str = "level_feedback"
    sandbox_slice: int = 1
    history_mode: str = "full"
    reward: str = "level"
    templates: str = "tiny"
    reward_points: dict = dataclasses.field(default_factory=dict)
    feedback_style: str = "compact"
    workers: int = 0
    wall_s_per_test: float = 2.0
    expert: str = ""
    expert_options: dict = dataclasses.field(default_factory=dict)
    end_on_success: bool = False

    def __post_init__(self):
        check_choice("feedback_mode", self.feedback_mode, FEEDBACK_MODES)
        check_choice("history_mode", self.history_mode, HISTORY_MODES)
        check_choice("reward", self.reward, CODE_REWARDS)
        check_choice("feedback_style", self.feedback_style, FEEDBACK_STYLES)
        check_int("workers", self.workers, 0)
        check_number("wall_s_per_test", self.wall_s_per_test, above=0)
        check_bool("end_on_success", self.end_on_success)
        for name in ("reward_points", "expert_options"):
            object.__setattr__(self, name, dict(getattr(self, name)))


@register_env("code", options=CodeEnvOptions, plays=CodeTask,
              ends_on_success=lambda options: options.end_on_success)
def build_code_env(request: EnvRequest) -> BuiltEnv:
    e = request.env.options
    try:
        templates = request.suite.templates(e.templates)
    except ValueError as error:
        raise ValueError(f"config.env.templates: {error}") from None
    limits = build(Limits, "env.wall_s_per_test", wall_s_per_test=e.wall_s_per_test)
    points = known_fields(CodeRewardConfig, e.reward_points, "env.reward_points")
    env_config = build(CodeEnvConfig, "env", num_agents=request.env.num_agents,
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
