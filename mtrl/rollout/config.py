"""Configuration of multi-turn, multi-agent tree rollouts (docs/design.md section 2)."""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

from mtrl.config.fields import check_choice
from mtrl.credit.joint_actions import JOINT_ACTION_MODES

JointMode = Literal["align", "cross"]  # the names of JOINT_ACTION_MODES
AGENT_PARAMS = ("separate", "shared")


@dataclasses.dataclass(frozen=True)
class RolloutConfig:
    """How the tree grows and how each node samples.

    num_turns: T, turns per episode (tree depth).
    num_generations: G, completions each agent samples at every node.
    num_agents: N cooperating agents (N = 1 is plain multi-turn GRPO).
    joint_mode: `align` pairs the g-th completions (J = G joint actions per node);
      `cross` takes their Cartesian product (J = G^N).
    termination_threshold: a node whose mean immediate reward over its J joint
      actions is strictly greater than this does not expand; None never stops early.
    discount: γ in R_t = r_t + γ·mean(children).
    max_new_tokens: completion budget per agent per turn.
    max_context: total tokens a branch's history may hold (prompt, completions,
      observations). A turn that cannot fit its full budget is truncated to what
      fits, marked, reported in metrics and masked out of the loss.
    max_nodes_per_turn: cap on nodes (all tasks) at any turn, checked before
      anything is generated so a too-large tree fails with a message, not an OOM.
    agent_params: `separate` (one parameter set per agent, stacked) or `shared`
      (one policy; agents differ by their role prompts).
    env_groups: K, groups of whole tasks generated one after another at each turn;
      with K > 1 each group's environment work (sandbox runs, expert calls) is
      submitted with `step_async` as soon as its completions exist and runs while the
      device generates the next group (1: one batched call per agent, no overlap).
    """

    num_turns: int = 2
    num_generations: int = 4
    num_agents: int = 2
    joint_mode: JointMode = "align"
    termination_threshold: float | None = None
    discount: float = 1.0
    max_new_tokens: int = 64
    max_context: int = 512
    temperature: float = 1.0  # 0 = greedy
    top_p: float = 1.0
    top_k: int = 0
    max_nodes_per_turn: int = 4096
    agent_params: str = "separate"
    env_groups: int = 1

    def __post_init__(self):
        positive = ("num_turns", "num_generations", "num_agents", "max_new_tokens",
                    "max_context", "max_nodes_per_turn", "env_groups")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"RolloutConfig.{name} must be >= 1, got {getattr(self, name)}")
        check_choice("RolloutConfig.joint_mode", self.joint_mode, JOINT_ACTION_MODES)
        check_choice("RolloutConfig.agent_params", self.agent_params, AGENT_PARAMS)
        if not 0.0 <= self.discount <= 1.0:
            raise ValueError(f"RolloutConfig.discount must be in [0, 1], got {self.discount}")
        if self.temperature < 0:
            raise ValueError(f"RolloutConfig.temperature must be >= 0, got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"RolloutConfig.top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"RolloutConfig.top_k must be >= 0 (0 = off), got {self.top_k}")
        if self.termination_threshold is not None and not math.isfinite(
                self.termination_threshold):
            raise ValueError("RolloutConfig.termination_threshold must be finite or None, "
                             f"got {self.termination_threshold}")
        if self.max_new_tokens >= self.max_context:
            raise ValueError(f"RolloutConfig.max_context ({self.max_context}) must exceed "
                             f"max_new_tokens ({self.max_new_tokens})")

    @property
    def joint_actions_per_node(self) -> int:
        """J: G (align) or G^N (cross)."""
        if self.joint_mode == "align":
            return self.num_generations
        return self.num_generations ** self.num_agents

    def sampling_config(self, *, stop_token_ids: tuple[int, ...], pad_id: int):
        """The sampler settings of this rollout (temperature 0 means greedy)."""
        from mtrl.sampling import SamplingConfig
        greedy = self.temperature == 0.0
        return SamplingConfig(temperature=1.0 if greedy else self.temperature,
                              top_p=self.top_p, top_k=self.top_k, greedy=greedy,
                              max_new_tokens=self.max_new_tokens,
                              stop_token_ids=tuple(stop_token_ids), pad_id=pad_id)

    def max_nodes_at_turn(self, num_tasks: int, turn: int) -> int:
        """Nodes at 1-based `turn` when nothing terminates: P·J^(turn−1)."""
        return num_tasks * self.joint_actions_per_node ** (turn - 1)

    def check_capacity(self, num_tasks: int) -> None:
        """Raises if the untruncated tree would exceed `max_nodes_per_turn`."""
        for turn in range(1, self.num_turns + 1):
            nodes = self.max_nodes_at_turn(num_tasks, turn)
            if nodes > self.max_nodes_per_turn:
                raise ValueError(
                    f"turn {turn} could hold {nodes} nodes ({num_tasks} tasks x "
                    f"J={self.joint_actions_per_node}^{turn - 1}, joint_mode="
                    f"{self.joint_mode!r}, G={self.num_generations}, N={self.num_agents}), "
                    f"above max_nodes_per_turn={self.max_nodes_per_turn}; lower "
                    f"num_generations/num_turns, use joint_mode='align', or raise the cap")
