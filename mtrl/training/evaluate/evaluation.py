"""Held-out evaluation of multi-turn agents: episodic success within T turns.

An evaluation episode is one chain of T turns (G = 1, so J = 1 and the tree is a
path): the agents answer, the environment replies with its feedback, they revise.
An episode is solved at the first turn whose joint action the environment marks
`done` (for code: every hidden test passed). Reported, over the tasks, under a
prefix naming the split ("heldout" = validation, "test"):

  heldout_success          solved within T turns (at any turn), greedy decoding
  heldout_success_turn{t}  solved within the first t turns (cumulative), greedy
  heldout_final_turn_success   the last turn's answer solves it (a revision can
      break an answer that was right: any-turn success minus this counts those)
  heldout_mean_turns_to_success   among solved episodes
  heldout_reward_turn1, heldout_{component}_turn1   first-turn reward and components
  heldout_pass@k, heldout_sampled_success   with k sampled episodes per task
      (unbiased pass@k of Chen et al. 2021 with n = k: 1 if any episode solved it)
  heldout_feedback_gain, heldout_feedback_gain_tasks, ...   the feedback-use measure
      (feedback_gain.py): after a failed turn t < T, turn t+1's success with the
      environment's observation minus with "Try again." in its place, greedy

The turn-1 vs turn-T gap is the benefit of the feedback loop; the feedback gain says
how much of it the observation's content gives, rather than a second attempt as such.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import jax
import numpy as np

from mtrl.rollout.environment import Environment
from mtrl.rollout import RolloutConfig, rollout
from mtrl.rollout.backend import PolicyBackend
from mtrl.rollout.generator import per_agent_formats
from mtrl.rollout.tree import TreeRollout
from mtrl.training.evaluate.feedback_gain import gain_counts, gain_metrics
from mtrl.training.evaluate.feedback_probe import StepRecorder, probe_feedback


@dataclasses.dataclass
class EvalResult:
    metrics: dict[str, float]
    transcripts: list[str]
    # The feedback gain's [T-1, 3] counts (sums over tasks, which processes add) behind
    # metrics' <prefix>_feedback_gain* keys; None when not measured.
    feedback_counts: np.ndarray | None = None
    prefix: str = "heldout"


def chain_success(tree: TreeRollout) -> np.ndarray:
    """[P, T] bool: episode p solved within the first t turns (chains, G = 1)."""
    return np.logical_or.accumulate(turn_success(tree), axis=1)


def turn_success(tree: TreeRollout) -> np.ndarray:
    """[P, T] bool: episode p's joint action at turn t solves it (chains, G = 1)."""
    if tree.joint_actions != 1:
        raise ValueError(f"chain_success needs G = 1 chains, got J = {tree.joint_actions}")
    num_turns = tree.config.num_turns
    solved = np.zeros((tree.num_tasks, num_turns), bool)
    for record in tree.turns:
        # Node index of a chain at any turn is its task index (J = 1).
        solved[record.node_index, record.turn - 1] = record.done[:, 0]
    return solved


def evaluate(tasks: Sequence, env: Environment, greedy_backend: PolicyBackend, tokenizer,
             config: RolloutConfig, key: jax.Array, *,
             sampled_backend: PolicyBackend | None = None, num_samples: int = 0,
             num_transcripts: int = 2, turn_format=None, prefix: str = "heldout",
             feedback_gain: bool = True) -> EvalResult:
    """Greedy episodes on every task (and `num_samples` sampled ones if a sampling
    backend is given), and with `feedback_gain` the feedback-use probe on the greedy
    ones (feedback_probe.py; none for T = 1 or an environment that cannot render a
    retry observation). The backends carry the decoding settings; metric names start
    with `prefix`."""
    chain = dataclasses.replace(config, num_generations=1, joint_mode="align",
                                termination_threshold=None)
    recorded = StepRecorder(env) if feedback_gain else env
    tree = rollout(list(tasks), recorded, greedy_backend, tokenizer, chain, key, turn_format)
    per_turn = turn_success(tree)
    solved = np.logical_or.accumulate(per_turn, axis=1)
    # An episode's final turn is the last one it played: one that ended at turn t
    # (StepResult.ended) has no later turn to be judged on.
    played = np.zeros_like(per_turn)
    for record in tree.turns:
        played[record.node_index, record.turn - 1] = True
    last = played.shape[1] - 1 - np.argmax(played[:, ::-1], axis=1)
    final = per_turn[np.arange(len(last)), last]
    metrics = {f"{prefix}_success": float(solved[:, -1].mean()),
               f"{prefix}_final_turn_success": float(final.mean())}
    for t in range(chain.num_turns):
        metrics[f"{prefix}_success_turn{t + 1}"] = float(solved[:, t].mean())
    if solved[:, -1].any():
        first = solved.argmax(axis=1) + 1
        metrics[f"{prefix}_mean_turns_to_success"] = float(first[solved[:, -1]].mean())
    first_turn = tree.turns[0]
    metrics[f"{prefix}_reward_turn1"] = float(first_turn.rewards.mean())
    for name, values in first_turn.components.items():
        metrics[f"{prefix}_{name}_turn1"] = float(values.mean())
    counts = None
    if feedback_gain:
        probe = probe_feedback(tree, recorded, greedy_backend, tokenizer, chain, key,
                               per_agent_formats(turn_format, chain.num_agents))
        if probe is not None:
            counts = gain_counts(*probe)
            metrics.update(gain_metrics(counts, prefix))
    transcripts = [_episode_text(tree, p, tasks[p]) for p in range(min(num_transcripts,
                                                                       len(tasks)))]
    if sampled_backend is not None and num_samples > 0:
        repeated = [task for task in tasks for _ in range(num_samples)]
        sampled = rollout(repeated, env, sampled_backend, tokenizer, chain,
                          jax.random.fold_in(key, 1), turn_format)
        per_episode = chain_success(sampled)[:, -1].reshape(len(tasks), num_samples)
        metrics[f"{prefix}_sampled_success"] = float(per_episode.mean())
        metrics[f"{prefix}_pass@{num_samples}"] = float(per_episode.any(axis=1).mean())
    return EvalResult(metrics=metrics, transcripts=transcripts, feedback_counts=counts,
                      prefix=prefix)


def _episode_text(tree: TreeRollout, task_index: int, task) -> str:
    name = getattr(task, "task_id", str(task_index))
    parts = [f"=== task {name} ==="]
    if getattr(task, "prompt", None):
        parts.append(f"--- task prompt ---\n{task.prompt}")
    for agent in range(tree.config.num_agents):
        parts.append(tree.transcript(task_index, (0,) * tree.config.num_turns, agent))
    return "\n".join(parts)
