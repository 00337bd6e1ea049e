"""The feedback-use probe: turn t+1 of each failed evaluation episode played twice,
after the environment's observation and after the retry message (feedback_gain.py
has the measure).

Both branches start from the episode's history through turn t's completion, and
differ only in the observation of turn t, rendered by the generator's own call
(`rollout.history.observation_ids`) with its own context cut; the observed branch's
history is checked token for token against the one the rollout played, so it is the
same state. The retry observation is the environment's (`retry_observations`: the
message in place of its feedback). Both branches are one batch, generated with the
key of the factual turn t+1 and the evaluation's (greedy) backend, and each is a
fresh prefill of its history, so the difference is the observation's alone. Every
agent's observation is swapped at once; the environment scores both joint actions
from the same branch state.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any, Sequence

import jax
import numpy as np

from mtrl.rollout.backend import PolicyBackend
from mtrl.rollout.config import RolloutConfig
from mtrl.rollout.environment import Environment, StepResult
from mtrl.rollout.history import observation_ids
from mtrl.rollout.tree import TreeRollout


class StepRecorder(Environment):
    """`env`, keeping every step's results by turn in the order the steps were asked
    for (the generator asks group by group, in node order), so turn t's results line
    up with the tree's turn-t nodes. Owns nothing: close() leaves `env` open."""

    def __init__(self, env: Environment):
        self.env = env
        self.num_agents = env.num_agents
        self.info_keys = env.info_keys
        self._steps: list[tuple[int, Any]] = []  # (turn, results or their future)

    def reset(self, task):
        return self.env.reset(task)

    def step(self, states, actions, turn):
        results = self.env.step(states, actions, turn)
        self._steps.append((turn, results))
        return results

    def step_async(self, states, actions, turn) -> concurrent.futures.Future:
        future = self.env.step_async(states, actions, turn)
        self._steps.append((turn, future))
        return future

    def retry_observations(self, result):
        return self.env.retry_observations(result)

    def results(self, turn: int) -> list[StepResult]:
        out = []
        for at, results in self._steps:
            if at == turn:
                out += list(results.result() if hasattr(results, "result") else results)
        return out


def probe_feedback(tree: TreeRollout, recorder: StepRecorder, backend: PolicyBackend,
                   tokenizer, config: RolloutConfig, key: jax.Array, formats: Sequence
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(observed, retry, counted), each [P, T−1] bool (feedback_gain.gain_counts'
    inputs), for the G = 1 chains of `tree` grown on `recorder` with `key`; None
    when the environment cannot render a retry observation.

    counted[p, t−1]: episode p's turn t failed (not `done`) and it played turn t+1;
    observed / retry: turn t+1 then succeeded after the observation / the message.
    """
    if tree.joint_actions != 1:
        raise ValueError(f"the feedback probe needs G = 1 chains, got J = {tree.joint_actions}")
    num_turns = tree.config.num_turns
    if num_turns < 2 or recorder.retry_observations(recorder.results(1)[0]) is None:
        return None
    observed, retry, counted = (np.zeros((tree.num_tasks, num_turns - 1), bool)
                                for _ in range(3))
    n, stop = tree.config.num_agents, tokenizer.eos_id
    for now, after in zip(tree.turns, tree.turns[1:]):
        t = now.turn
        results = recorder.results(t)
        if [r.done for r in results] != now.done[:, 0].tolist():
            raise RuntimeError(f"turn {t}: the recorded steps are not the tree's nodes")
        rows = [m for m in range(len(results)) if not now.done[m, 0] and now.expanded[m, 0]]
        if not rows:
            continue
        # Per branch (observed rows, then retry rows): every agent's observation.
        shown = ([results[m].observations for m in rows]
                 + [recorder.retry_observations(results[m]) for m in rows])
        played = {int(p): i for i, p in enumerate(after.node_index)}
        turn_key = jax.random.fold_in(key, t + 1)  # the factual turn t+1's key
        texts = []
        for a in range(n):
            histories = [_history(now, m, a, obs[a], tokenizer, formats[a], stop,
                                  config.max_context)
                         for m, obs in zip(rows * 2, shown)]
            for m, history in zip(rows, histories):  # the observed branch: the rollout's
                if history != after.contexts[a][played[int(now.node_index[m])]]:
                    raise RuntimeError(f"turn {t + 1}: agent {a}'s rebuilt history of node "
                                       f"{int(now.node_index[m])} is not the one the rollout "
                                       "played")
            budgets = [min(config.max_new_tokens, config.max_context - len(h))
                       for h in histories]
            samples, _ = backend.generate(a, backend.begin(a, histories), 1, budgets,
                                          jax.random.fold_in(turn_key, a))
            texts.append([tokenizer.decode(s[:-1] if s and s[-1] == stop else s)
                          for s in samples.tokens])
        states = [results[m].state for m in rows] * 2
        actions = [tuple(texts[a][i] for a in range(n)) for i in range(2 * len(rows))]
        done = np.array([r.done for r in recorder.env.step(states, actions, t + 1)], bool)
        tasks = now.node_index[rows]  # a chain's node index is its task index
        counted[tasks, t - 1] = True
        observed[tasks, t - 1] = done[:len(rows)]
        retry[tasks, t - 1] = done[len(rows):]
    return observed, retry, counted


def _history(record, m: int, agent: int, observation: str, tokenizer, turn_format,
             stop: int, max_context: int) -> list[int]:
    """Agent `agent`'s history at the next turn of node row m after `observation`: the
    generator's rendering and its context cut (generator._children)."""
    completion = record.completions[agent][m]
    stopped = bool(completion) and completion[-1] == stop
    new = observation_ids(tokenizer, turn_format, observation, stopped, record.reset_context)
    base = [] if record.reset_context else record.contexts[agent][m] + completion
    room = max_context - 1 - len(base)  # room for one sampled token
    return base + new[:max(room, 0)]
