"""The feedback gain on the guessing environment (mtrl/envs/guess/), through evaluate()
with scripted policies: binary search, which reads the verdicts, has a large gain
(the next turn succeeds after the verdict and never after "Try again.", which leaves
it repeating its guess); a fixed guess that ignores them has gain 0."""

import re

import jax
import pytest

from mtrl.data.guess_tasks import bisect_guesses
from mtrl.data.suite import DataConfig, build_suite
from mtrl.envs.guess import GuessEnv
from mtrl.rollout import RolloutConfig
from mtrl.training.evaluate.evaluation import evaluate
from tests.rollout.scripted import CharTokenizer
from tests.training.evaluate.test_feedback_gain import Policy

TURNS = 6


def bounds(history):
    low, high = re.search(r"greater than (-?\d+) and less than (-?\d+)", history).groups()
    return int(low), int(high)


def bisects(agent, history):
    """The midpoint of the open interval the verdicts so far leave."""
    a, b = bounds(history)
    for guess, side in re.findall(r"(?m)^(-?\d+) is too (low|high)\.", history):
        a, b = (int(guess), b) if side == "low" else (a, int(guess))
    return str((a + b) // 2)


def fixed(agent, history):
    """The first midpoint, whatever the verdicts say."""
    a, b = bounds(history)
    return str((a + b) // 2)


@pytest.fixture(scope="module")
def tasks():
    suite = build_suite(DataConfig(name="guess", test_split="test", num_train=8, num_eval=8,
                                   num_test=40), 0)
    return suite.tasks("test")


def run(tasks, choose):
    tokenizer = CharTokenizer()
    config = RolloutConfig(num_turns=TURNS, num_generations=1, num_agents=1,
                           max_new_tokens=8, max_context=4096)
    return evaluate(tasks, GuessEnv(), Policy(tokenizer, choose), tokenizer, config,
                    jax.random.key(0), prefix="test").metrics


def test_binary_search_reads_the_verdicts(tasks):
    """Per task, k = its search's length: turns 1..k−1 are counted pairs, and only the
    pair before turn k succeeds after the verdict (none after the retry message), so
    gain = #{k >= 2} / Σ (k − 1)."""
    lengths = [len(bisect_guesses(t)) for t in tasks]
    assert max(lengths) <= TURNS
    m = run(tasks, bisects)
    assert m["test_success"] == 1.0
    assert m["test_feedback_gain_tasks"] == sum(k - 1 for k in lengths)
    assert m["test_feedback_gain"] == pytest.approx(
        sum(k >= 2 for k in lengths) / sum(k - 1 for k in lengths))
    assert m["test_feedback_gain_retry"] == 0.0 and m["test_feedback_gain"] > 0.2


def test_a_fixed_guess_ignores_them(tasks):
    lengths = [len(bisect_guesses(t)) for t in tasks]
    m = run(tasks, fixed)
    assert m["test_success"] == pytest.approx(sum(k == 1 for k in lengths) / len(tasks))
    assert m["test_success"] < 0.2
    assert m["test_feedback_gain"] == 0.0
    assert m["test_feedback_gain_tasks"] == (TURNS - 1) * sum(k > 1 for k in lengths)
