"""The `code` builder: env.reward_points reaches the environment's reward, and a bad
point name or value is a one-line error naming the field."""

import pytest

from mtrl.data.suite import DataConfig, build_suite
from mtrl.envs.code.rewards import CodeRewardConfig
from mtrl.training.config import base_config
from mtrl.envs.registry import build_environment
from mtrl.training.config.readers import read_section


def built(**env):
    c = base_config()
    c.data.num_train, c.data.num_eval = 4, 2
    c.env.workers = 1
    c.env.update(env)
    suite = build_suite(DataConfig(**c.data.to_dict()), 0)
    return build_environment(read_section(c, "env"), c.rollout.num_turns, c.data.name,
                             suite, tokenizer=None)


def test_reward_points_reach_the_environment():
    env = built(reward_points={"main_defined": 0.2, "syntax": 0.1})
    try:
        assert env.env.config.reward_config == CodeRewardConfig(main_defined=0.2, syntax=0.1)
        # One agent's maximum is main_defined + syntax + tests: 0.2 + 0.1 + 1.0 for one;
        # the default config has two agents (0.4 + 0.2 + 0.1 + 1.0 + 0.5 + 1.0).
        assert env.env.max_reward == pytest.approx(3.2)
    finally:
        env.close()
    env = built()  # {}: the defaults
    try:
        assert env.env.config.reward_config == CodeRewardConfig()
    finally:
        env.close()


@pytest.mark.parametrize("points, message", [
    ({"colour": 1.0}, r"config.env.reward_points: unknown field\(s\) \['colour'\]"),
    ({"syntax": -1.0}, "config.env.reward_points: CodeRewardConfig.syntax must be >= 0"),
])
def test_bad_reward_points_are_one_line_errors(points, message):
    with pytest.raises(ValueError, match=message):
        built(reward_points=points)
