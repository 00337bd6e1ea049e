"""The `math` and `tool` builders: the experiment configs build their environments,
and bad settings are one-line errors naming the field."""

import pytest

from mtrl.data.suite import DataConfig, build_suite
from mtrl.envs.math import MathEnv
from mtrl.envs.tool import ToolEnv
from mtrl.envs.registry import build_environment
from mtrl.training.config.readers import read_section
from tests.envs.math.smoke import minimal


def built(c):
    suite = build_suite(DataConfig(**{k: v for k, v in c.data.to_dict().items()}), 0)
    return build_environment(read_section(c, "env"), c.rollout.num_turns, c.data.name,
                             suite, tokenizer=None)


def test_the_configs_build_their_environments():
    env = built(minimal("math"))
    assert isinstance(env.env, MathEnv) and env.pool is None
    assert env.env.config.feedback_mode == "unary"
    env.close()
    env = built(minimal("tool"))
    try:
        assert isinstance(env.env, ToolEnv) and env.pool is not None
        assert env.env.config.max_turns == 2  # rollout.num_turns of the shrunk config
        assert env.env.config.max_output_chars == 200
    finally:
        env.close()


@pytest.mark.parametrize("name, change, message", [
    ("math", dict(feedback_mode="level_feedback"),
     "config.env.feedback_mode: must be one of correctness, direction, plain, unary"),
    ("math", dict(history_mode="feedback"), "config.env.history_mode: must be one of full, last"),
    ("tool", dict(num_agents=2), "config.env.num_agents: the tool environment has one agent"),
    ("tool", dict(max_turns=1), "config.env.max_turns: 1 is below rollout.num_turns=2"),
    ("tool", dict(templates="tiny"), "config.env.templates"),
])
def test_bad_settings_are_one_line_errors(name, change, message):
    c = minimal(name)
    c.env.update(change)
    with pytest.raises(ValueError) as error:
        built(c).close()
    assert message in str(error.value) and "\n" not in str(error.value)


def test_the_math_env_needs_a_math_suite(shared_data):
    c = minimal("math")
    c.data.update(dict(name="mbpp_sanitized", path=str(shared_data / "mbpp"),
                       train_split="train", eval_split="validation", options={}))
    with pytest.raises(ValueError, match="config.env.name: env 'math' plays MathTask tasks, "
                                         "but suite 'mbpp_sanitized' has CodeTask tasks"):
        built(c)
