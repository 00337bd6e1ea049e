"""The embedded default's feedback gain, through its real code environment (sandbox
included), task family and turn format, with scripted agents that do what its trained
agents do: the helper copies the coefficient k the failing probe states
(`f(1) - f(0) == k`), opening with the SFT teacher's k = 1; main copies the offset b
the prompt restates. The gain is large (they read k from the feedback); with the
observation ignored it is 0.

k and b range over -19..19 here instead of -99..99: the family's splits then build in
a second instead of minutes, and nothing of the environment depends on the ranges."""

import re

import jax
import pytest

from mtrl.data.suite import build_suite
from mtrl.envs.registry import build_environment
from mtrl.training.config import module_from_file, parse
from mtrl.training.evaluate.evaluation import evaluate
from mtrl.training.run.build import build_tokenizer
from mtrl.training.run.chat import build_turn_format
from tests.data.synthetic.world import CONFIGS
from tests.training.evaluate.test_feedback_gain import Policy

NUM_TASKS = 6


@pytest.fixture(scope="module")
def default_world():
    config = module_from_file(CONFIGS / "default.py").get_config()
    config.data.num_train, config.data.num_eval, config.data.num_test = 10, 5, NUM_TASKS
    config.data.options = dict(config.data.options, coefficient_range=(-19, 19),
                               offset_range=(-19, 19))
    run = parse(config)
    suite = build_suite(run.data, run.seed)
    built = build_environment(run.env, run.rollout.num_turns, run.data.name, suite, None)
    tokenizer = build_tokenizer(run.tokenizer, run.model)
    try:
        yield (run, suite.tasks("test"), built.env, tokenizer,
               build_turn_format(run.chat, tokenizer, run.num_agents))
    finally:
        built.close()


def copies_k(agent, history):
    """The default's trained agents: helper (agent 0) and main (agent 1)."""
    if agent == 0:
        probe = re.findall(r"f\(1\) - f\(0\) == (-?\d+)", history)
        return f"def aux(x, k={probe[-1] if probe else 1}):\n    return k*x\n"
    b = re.findall(r"with f\(0\) == (-?\d+)", history)[-1]
    return f"def f(x, b={b}):\n    y = aux(x)\n    return y+b\n"


def keeps_k(agent, history):
    """The same agents with the helper resubmitting k = 1 (observation ignored)."""
    return copies_k(agent, "" if agent == 0 else history)


@pytest.mark.parametrize("choose, gain", [(copies_k, 1.0), (keeps_k, 0.0)])
def test_the_default_agents_that_copy_k_use_the_feedback(default_world, choose, gain):
    run, tasks, env, tokenizer, turn_format = default_world
    result = evaluate(tasks, env, Policy(tokenizer, choose), tokenizer, run.rollout,
                      jax.random.key(0), turn_format=turn_format, prefix="test")
    m = result.metrics
    assert m["test_success_turn1"] == 0.0  # no test task's k is the teacher's 1
    assert m["test_feedback_gain_tasks"] == NUM_TASKS
    assert m["test_feedback_gain"] == gain
    assert m["test_success"] == gain  # a gain is what copying k adds at turn 2
    assert env.config.history_mode == "feedback"  # turn 2: a fresh prompt (retry: rendered)
