"""The host-side record of one tree rollout and its dense views (docs/design.md section 2).

Nodes of turn t are numbered by their flat index in the dense layout
[P, J, …, J] (t−1 trailing J axes): the child reached from node n by joint action
j is node n·J + j of turn t+1. Rewards of turn t are then the rows
`node_index` of a [P·J^(t−1), J] array, and reshaping gives [P] + [J]*t.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator

import numpy as np

from mtrl.rollout.config import RolloutConfig


@dataclasses.dataclass
class TurnRecord:
    """Everything generated and observed at one turn (M active nodes)."""

    turn: int  # 1-based
    node_index: np.ndarray  # [M] int64 flat index into [P] + [J]*(turn-1)
    contexts: list[list[list[int]]]  # [N][M] each node's history (sample row r: node r // G)
    completions: list[list[list[int]]]  # [N][M·G] sampled token ids
    logprobs: list[list[np.ndarray]]  # [N][M·G] float32 [len]
    truncated: np.ndarray  # [N, M·G] bool: cut by the context budget (loss-masked)
    texts: list[list[str]]  # [N][M·G] decoded completions (shown to the env only)
    rewards: np.ndarray  # [M, J] float32 immediate rewards
    expanded: np.ndarray  # [M, J] bool: the joint action has a child node at turn+1
    done: np.ndarray  # [M, J] bool: the joint action solved the task (StepResult.done)
    components: dict[str, np.ndarray]  # name -> [M, J] reward components
    observations: list[list[str]]  # [N][M·J] next-turn observation per branch
    infos: list[Any]  # [M·J] environment diagnostics
    ended: np.ndarray  # [M, J] bool: the step ended its episode (StepResult.ended)
    reset_context: bool = False  # observations are whole prompts (history mode "last")

    def __post_init__(self):
        shape = self.rewards.shape
        self.expanded, self.ended = np.asarray(self.expanded, bool), np.asarray(self.ended, bool)
        if self.expanded.shape != shape or self.ended.shape != shape:
            raise ValueError(f"TurnRecord: expanded {self.expanded.shape} and ended "
                             f"{np.shape(self.ended)} must match rewards {shape} ([M, J])")
        if (self.expanded & self.ended).any():
            raise ValueError("TurnRecord: a step that ended its episode cannot have a child")


@dataclasses.dataclass
class TreeRollout:
    config: RolloutConfig
    num_tasks: int
    joint_index: np.ndarray  # [J, N] int32: completion of agent a in joint action j
    turns: list[TurnRecord]
    metrics: dict[str, float]

    @property
    def joint_actions(self) -> int:
        return self.joint_index.shape[0]

    def dense_shape(self, turn: int) -> tuple[int, ...]:
        return (self.num_tasks,) + (self.joint_actions,) * turn

    def _dense(self, turn: int, rows: np.ndarray, fill, dtype) -> np.ndarray:
        record = self.turns[turn - 1]
        j = self.joint_actions
        flat = np.full((self.num_tasks * j ** (turn - 1), j), fill, dtype)
        flat[record.node_index] = rows
        return flat.reshape(self.dense_shape(turn))

    def dense_rewards(self) -> list[np.ndarray]:
        """r_t of shape [P] + [J]*t; entries of nodes never generated are 0."""
        return [self._dense(r.turn, r.rewards, 0.0, np.float32) for r in self.turns]

    def dense_exists(self) -> list[np.ndarray]:
        """Which entries of r_t were generated."""
        return [self._dense(r.turn, True, False, bool) for r in self.turns]

    def dense_expanded(self) -> list[np.ndarray]:
        """Which joint actions of turn t have children at turn t+1."""
        return [self._dense(r.turn, r.expanded, False, bool) for r in self.turns]

    def dense_components(self) -> dict[str, list[np.ndarray]]:
        names = self.turns[0].components.keys() if self.turns else ()
        return {name: [self._dense(r.turn, r.components[name], 0.0, np.float32)
                       for r in self.turns] for name in names}

    def joint_steps(self) -> Iterator[tuple[int, TurnRecord, int, int, int, dict]]:
        """Every generated joint action, parents before children: (turn index, its
        record, row m of the record, the node m stands for, joint action j, the
        environment's step info). Its child node at the next turn is node·J + j."""
        joint = self.joint_actions
        for t, record in enumerate(self.turns):
            for m, node in enumerate(record.node_index):
                for j in range(joint):
                    yield t, record, m, int(node), j, record.infos[m * joint + j]

    def leaves(self) -> int:
        """Joint actions without children: the tree's leaves."""
        return int(sum((~r.expanded).sum() for r in self.turns))

    def transcript(self, task: int, path: tuple[int, ...], agent: int = 0) -> str:
        """The text history of agent `agent` along the branch `path` of joint actions."""
        lines = []
        node = task
        for record, j in zip(self.turns, path):
            m = int(np.flatnonzero(record.node_index == node)[0]) if (
                record.node_index == node).any() else None
            if m is None:
                break
            g = int(self.joint_index[j, agent])
            row = m * self.config.num_generations + g
            lines.append(f"--- turn {record.turn} (agent {agent}, reward "
                         f"{record.rewards[m, j]:+.3f}) ---\n{record.texts[agent][row]}")
            if record.expanded[m, j] or record.ended[m, j]:
                lines.append(f"--- observation ---\n"
                             f"{record.observations[agent][m * self.joint_actions + j]}")
            if not record.expanded[m, j]:
                break
            node = node * self.joint_actions + j
        return "\n".join(lines)
