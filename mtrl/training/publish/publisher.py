"""The publish stage: after an update (and after a restore or the warm start) the
sampler's backends take the train state's policies.

    policies(state)  [one parameter state per policy]   (one when shared)
    publish(state)   every backend samples from them    (process-local copies)

With parameters sharded over several processes each policy is gathered once here
(process_rollout.local_params), so every process samples from whole parameters.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from mtrl.parallel.process_rollout import local_params
from mtrl.rollout.backend import PolicyBackend
from mtrl.training.policy.train_state import TrainState, agent_policy


@dataclasses.dataclass(frozen=True)
class PublishStage:
    """The backends that sample from the current policies (sampled, greedy)."""

    backends: Sequence[PolicyBackend]
    num_policies: int  # 1 with shared parameters, else the number of agents

    def policies(self, state: TrainState) -> list:
        """Each policy in the policy graph (LoRA: base + adapters, unmerged, as trained)."""
        return [agent_policy(state, a) for a in range(self.num_policies)]

    def publish(self, state: TrainState) -> None:
        """Every backend samples from `state`'s policies from now on."""
        states = local_params(self.policies(state))  # whole on every process
        for backend in self.backends:
            backend.set_states(states)
