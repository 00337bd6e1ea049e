"""The feedback-use measure: the pure counts -> metrics by hand, and the probe through
evaluate() with scripted policies that ignore or read the observation."""

import re

import jax
import numpy as np
import pytest

from mtrl.rollout import RolloutConfig
from mtrl.rollout.backend import Contexts, PolicyBackend, Samples
from mtrl.rollout.environment import RETRY_MESSAGE, Environment, StepResult
from mtrl.training.evaluate import distributed_eval, feedback_probe
from mtrl.training.evaluate.evaluation import evaluate
from mtrl.training.evaluate.feedback_gain import gain_counts, gain_metrics
from tests.rollout.scripted import CharTokenizer


def test_gain_by_hand():
    # P = 4 tasks, T = 3 (columns: turn t = 1, 2; the success is turn t+1's).
    observed = np.array([[1, 0], [1, 1], [0, 0], [1, 0]], bool)
    retry = np.array([[0, 0], [1, 0], [0, 1], [0, 0]], bool)
    counted = np.array([[1, 0], [1, 1], [1, 1], [0, 0]], bool)
    counts = gain_counts(observed, retry, counted)
    # t = 1: tasks 0-2 counted, 2 observed and 1 retry successes; t = 2: tasks 1, 2,
    # 1 and 1 (task 3's successes are not counted).
    np.testing.assert_array_equal(counts, [[3, 2, 1], [2, 1, 1]])
    m = gain_metrics(counts, "test")
    assert m["test_feedback_gain"] == pytest.approx((3 - 2) / 5)
    assert m["test_feedback_gain_tasks"] == 5
    assert m["test_feedback_gain_observed"] == pytest.approx(3 / 5)
    assert m["test_feedback_gain_retry"] == pytest.approx(2 / 5)
    assert m["test_feedback_gain_turn1"] == pytest.approx(1 / 3)
    assert m["test_feedback_gain_turn2"] == 0.0
    assert m["test_feedback_gain_tasks_turn1"] == 3 and m["test_feedback_gain_tasks_turn2"] == 2


def test_no_counted_pair_has_a_count_and_no_gain_and_two_turns_no_per_turn_keys():
    none = np.zeros((3, 1), bool)
    assert gain_metrics(gain_counts(none, none, none), "heldout") == {
        "heldout_feedback_gain_tasks": 0.0}
    m = gain_metrics(np.array([[2, 2, 0]]), "heldout")
    assert m == {"heldout_feedback_gain_tasks": 2.0, "heldout_feedback_gain": 1.0,
                 "heldout_feedback_gain_observed": 1.0, "heldout_feedback_gain_retry": 0.0}


def test_shapes_and_types_are_checked():
    a = np.zeros((2, 1), bool)
    with pytest.raises(ValueError, match="one shape"):
        gain_counts(a, np.zeros((2, 2), bool), a)
    with pytest.raises(ValueError, match=r"\[P, T-1\]"):
        gain_counts(np.zeros(2, bool), np.zeros(2, bool), np.zeros(2, bool))
    with pytest.raises(ValueError, match="bool"):
        gain_counts(a, a.astype(int), a)
    with pytest.raises(ValueError, match=r"\[T-1, 3\]"):
        gain_metrics(np.zeros((1, 2)), "x")
    with pytest.raises(ValueError, match="successes <= n_t"):
        gain_metrics(np.array([[1, 2, 0]]), "x")


# -- the probe, with scripted policies ------------------------------------------------


class SecretEnv(Environment):
    """Task (id, secret): some agent answers "answer <secret>". A wrong answer's
    observation names the secret. Even ids' prompts carry a hint with the secret. `reset`: observations
    are whole prompts (the task line, then the feedback)."""

    def __init__(self, num_agents: int = 1, reset: bool = False):
        self.num_agents, self.reset_context = num_agents, reset

    def prompt(self, task):
        hint = f" (hint {task[1]})" if task[0] % 2 == 0 else ""
        return f"task {task[0]}{hint}: name the secret."

    def reset(self, task):
        return (task, 0), (self.prompt(task),) * self.num_agents

    def step(self, states, actions, turn):
        out = []
        for (task, played), action in zip(states, actions):
            assert played == turn - 1, "a turn played from the wrong state"
            done = any(a.strip() == f"answer {task[1]}" for a in action)
            feedback = "Solved." if done else f"Wrong. The secret is {task[1]}."
            obs = f"{self.prompt(task)} {feedback}" if self.reset_context else feedback
            out.append(StepResult(reward=float(done), done=done,
                                  observations=(obs,) * self.num_agents, state=(task, turn),
                                  reset_context=self.reset_context))
        return out


class ResetSecretEnv(SecretEnv):
    """SecretEnv with whole-prompt observations that says how its prompt reads with
    the retry message."""

    def __init__(self):
        super().__init__(reset=True)

    def retry_observations(self, result):
        return (f"{self.prompt(result.state[0])} {RETRY_MESSAGE}",) * self.num_agents


class Policy(PolicyBackend):
    """Completions written by `choose(agent, history text)`, stop token appended and
    cut to the budget as a sampler would."""

    def __init__(self, tokenizer, choose):
        self.tokenizer, self.choose = tokenizer, choose

    def begin(self, agent, prompts):
        return Contexts(tokens=[list(p) for p in prompts])

    def generate(self, agent, contexts, num_samples, max_new_tokens, key):
        tokens, histories = [], []
        for row, budget in zip(contexts.tokens, max_new_tokens):
            text = self.choose(agent, self.tokenizer.decode(row))
            comp = (self.tokenizer.encode(text) + [self.tokenizer.eos_id])[:budget]
            tokens += [comp] * num_samples
            histories += [row + comp] * num_samples
        return (Samples(tokens=tokens, logprobs=[-np.ones(len(t), np.float32) for t in tokens]),
                Contexts(tokens=histories))

    def extend(self, agent, contexts, rows, new_tokens):
        return Contexts(tokens=[contexts.tokens[r] + list(t) for r, t in zip(rows, new_tokens)])


def reads_feedback(agent, history):
    """Answers the secret the last observation names; "answer 0" without one."""
    found = re.findall(r"secret is (\d+)", history)
    return f"answer {found[-1]}" if found else "answer 0"


def ignores_feedback(agent, history):
    """Opens with "answer 0"; later answers the prompt's hint if it has one (so it
    succeeds at turn 2 on even tasks), never looking past the prompt."""
    prompt = history.split("\n", 1)[0]
    hint = re.search(r"hint (\d+)", prompt)
    return f"answer {hint.group(1)}" if hint and history.count("answer") else "answer 0"


TASKS = [(p, p + 1) for p in range(6)]  # secrets 1..6: "answer 0" always fails


def run_eval(env, choose, num_turns=2, **kwargs):
    tokenizer = CharTokenizer()
    config = RolloutConfig(num_turns=num_turns, num_generations=1,
                           num_agents=env.num_agents, max_new_tokens=32, max_context=4096)
    return evaluate(TASKS, env, Policy(tokenizer, choose), tokenizer, config,
                    jax.random.key(0), prefix="test", **kwargs)


def test_a_policy_that_ignores_the_observation_has_no_gain():
    result = run_eval(SecretEnv(), ignores_feedback, num_turns=3)
    m = result.metrics
    # It does improve by turn 2 (the hint), which is not feedback use.
    assert m["test_success_turn1"] == 0.0 and m["test_success"] == 0.5
    assert m["test_feedback_gain"] == 0.0
    assert m["test_feedback_gain_observed"] == m["test_feedback_gain_retry"] > 0
    # Turn 1: all six failed; turn 2: the three odd tasks failed again.
    assert m["test_feedback_gain_tasks_turn1"] == 6 and m["test_feedback_gain_tasks_turn2"] == 3
    assert m["test_feedback_gain_tasks"] == 9
    assert m["test_feedback_gain_turn1"] == m["test_feedback_gain_turn2"] == 0.0
    np.testing.assert_array_equal(result.feedback_counts, [[6, 3, 3], [3, 0, 0]])


def test_a_policy_that_reads_the_observation_has_a_large_gain():
    m = run_eval(SecretEnv(), reads_feedback).metrics
    assert m["test_success_turn1"] == 0.0 and m["test_success"] == 1.0
    assert m["test_feedback_gain"] == 1.0 and m["test_feedback_gain_tasks"] == 6
    assert m["test_feedback_gain_observed"] == 1.0 and m["test_feedback_gain_retry"] == 0.0
    assert "test_feedback_gain_turn1" not in m  # T = 2: the pooled numbers are turn 1's


def test_every_agent_sees_the_retry_message():
    # One right agent solves it: the retry branch fails only if no agent saw the secret.
    m = run_eval(SecretEnv(num_agents=2), reads_feedback).metrics
    assert m["test_feedback_gain"] == 1.0 and m["test_feedback_gain_tasks"] == 6


def test_whole_prompt_observations_need_the_environment_to_render_the_retry():
    # The base protocol cannot tell what a whole prompt restates of the task: no measure.
    m = run_eval(SecretEnv(reset=True), reads_feedback).metrics
    assert m["test_success"] == 1.0
    assert not any("feedback_gain" in k for k in m)
    # An environment that renders it gets one.
    m = run_eval(ResetSecretEnv(), reads_feedback).metrics
    assert m["test_feedback_gain"] == 1.0 and m["test_feedback_gain_tasks"] == 6


def test_the_probe_changes_no_other_number_and_can_be_turned_off():
    on = run_eval(SecretEnv(), reads_feedback, num_turns=3)
    off = run_eval(SecretEnv(), reads_feedback, num_turns=3, feedback_gain=False)
    assert off.feedback_counts is None
    assert off.metrics == {k: v for k, v in on.metrics.items() if "feedback_gain" not in k}
    assert on.transcripts == off.transcripts


def test_the_probe_refuses_a_history_the_rollout_did_not_play(monkeypatch):
    real = feedback_probe.observation_ids
    monkeypatch.setattr(feedback_probe, "observation_ids",
                        lambda *args: real(*args) + [ord(" ")])
    with pytest.raises(RuntimeError, match="not the one the rollout played"):
        run_eval(SecretEnv(), reads_feedback)


def test_processes_add_their_counts(monkeypatch):
    """Two processes' evaluations reduce to the gain of their summed counts (here the
    other process mirrors this one: counts double, the gain stays)."""
    monkeypatch.setattr(distributed_eval, "is_multiprocess", lambda: True)
    monkeypatch.setattr(distributed_eval.jax, "process_count", lambda: 2)
    monkeypatch.setattr(distributed_eval.jax, "process_index", lambda: 0)
    monkeypatch.setattr(distributed_eval, "allgather", lambda x: np.stack([x, x]))
    tasks = TASKS + [(p, p + 1) for p in range(6, 10)]
    tokenizer = CharTokenizer()
    config = RolloutConfig(num_turns=2, num_generations=1, num_agents=1,
                           max_new_tokens=32, max_context=4096)
    result = distributed_eval.evaluate_across_processes(
        tasks, jax.random.key(0), lambda share, key: evaluate(
            share, SecretEnv(), Policy(tokenizer, reads_feedback), tokenizer, config, key))
    assert result.metrics["heldout_feedback_gain_tasks"] == 10  # 5 tasks per share, x2
    assert result.metrics["heldout_feedback_gain"] == 1.0
    np.testing.assert_array_equal(result.feedback_counts, [[10, 10, 0]])
