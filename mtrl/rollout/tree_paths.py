"""A rollout tree as trajectories: its root-to-leaf paths, and back.

Trajectory-level estimators (MT-GRPO, IGPO, GiGPO, UFO) are written for a group of G
independent K-turn trajectories. A tree of one task holds such trajectories as its
paths: every leaf (a joint action without children) closes one path of joint actions
(j_1, …, j_k) from the task's root. `tree_paths` lists them per task, padded to K
turns with a mask, with each step's reward and environment info.

Going back, a step (turn t, node, joint action j) lies on every path through it;
`paths_to_dense` gives it the mean of those paths' values at turn t, in the dense
[P] + [J]*t layout of mtrl.credit.tree, where per-agent credit and the row gather
of MAGRPO apply unchanged.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from mtrl.rollout.tree import TreeRollout


@dataclasses.dataclass
class TaskPaths:
    """The Q root-to-leaf paths of one task, padded to the tree's K turns."""

    node: np.ndarray  # [Q, K] int64 flat node index of the step at turn k+1 (-1: absent)
    joint: np.ndarray  # [Q, K] int64 joint action taken there
    mask: np.ndarray  # [Q, K] bool step present
    rewards: np.ndarray  # [Q, K] float32 immediate reward (0 where absent)
    infos: list[list[Any]]  # [Q][k] environment info of each present step
    texts: list[list[tuple[str, ...]]]  # [Q][k] the agents' texts of each present step


def _step_texts(tree: TreeRollout, record, m: int, j: int) -> tuple[str, ...]:
    g = tree.config.num_generations
    return tuple(record.texts[a][m * g + int(tree.joint_index[j, a])]
                 for a in range(tree.config.num_agents))


def tree_paths(tree: TreeRollout) -> list[TaskPaths]:
    """Per task, its paths in depth-first order of joint actions (module docstring)."""
    num_turns, joint = len(tree.turns), tree.joint_actions
    where = [{int(node): m for m, node in enumerate(r.node_index)} for r in tree.turns]
    out = []
    for task in range(tree.num_tasks):
        paths: list[list[tuple[int, int, int]]] = []  # (turn index, m, j) per step

        def walk(t: int, node: int, prefix: list) -> None:
            m = where[t][node]
            record = tree.turns[t]
            for j in range(joint):
                steps = prefix + [(t, m, j)]
                if record.expanded[m, j] and t + 1 < num_turns:
                    walk(t + 1, node * joint + j, steps)
                else:
                    paths.append(steps)

        walk(0, task, [])
        q = len(paths)
        node = np.full((q, num_turns), -1, np.int64)
        chosen = np.zeros((q, num_turns), np.int64)
        mask = np.zeros((q, num_turns), bool)
        rewards = np.zeros((q, num_turns), np.float32)
        infos, texts = [], []
        for i, steps in enumerate(paths):
            infos.append([])
            texts.append([])
            for t, m, j in steps:
                record = tree.turns[t]
                node[i, t], chosen[i, t], mask[i, t] = record.node_index[m], j, True
                rewards[i, t] = record.rewards[m, j]
                infos[-1].append(record.infos[m * joint + j])
                texts[-1].append(_step_texts(tree, record, m, j))
        out.append(TaskPaths(node=node, joint=chosen, mask=mask, rewards=rewards,
                             infos=infos, texts=texts))
    return out


def paths_to_dense(tree: TreeRollout, paths: list[TaskPaths],
                   values: list[np.ndarray]) -> list[np.ndarray]:
    """Per turn t, [P] + [J]*t float32: each step's mean value over the paths through it.

    values[p] is [Q_p, K] for task p (read where paths[p].mask); steps never
    generated get 0.
    """
    joint = tree.joint_actions
    sums = [np.zeros((tree.num_tasks * joint ** t, joint), np.float64)
            for t in range(len(tree.turns))]
    counts = [np.zeros_like(s) for s in sums]
    for task_paths, task_values in zip(paths, values):
        task_values = np.asarray(task_values, np.float64)
        if task_values.shape != task_paths.mask.shape:
            raise ValueError(f"values {task_values.shape} must match the task's paths "
                             f"{task_paths.mask.shape} ([Q, K])")
        qs, ts = np.nonzero(task_paths.mask)
        for q, t in zip(qs, ts):
            n, j = task_paths.node[q, t], task_paths.joint[q, t]
            sums[t][n, j] += task_values[q, t]
            counts[t][n, j] += 1
    return [(s / np.maximum(c, 1)).astype(np.float32).reshape(tree.dense_shape(t + 1))
            for t, (s, c) in enumerate(zip(sums, counts))]


def info_array(paths: TaskPaths, key: str, dtype, fill=0) -> np.ndarray:
    """[Q, K] of info[key] at present steps (`fill` elsewhere); a missing key is an
    error naming it (the estimator's build-time check should have caught it)."""
    out = np.full(paths.mask.shape, fill, dtype)
    for q, steps in enumerate(paths.infos):
        for t, info in enumerate(steps):
            if key not in info:
                raise ValueError(f"the environment's step info lacks {key!r} (turn {t + 1}); "
                                 "see docs/methods.md for the fields each estimator reads")
            out[q, t] = info[key]
    return out
