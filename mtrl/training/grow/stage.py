"""The grow stage: step s's tasks rolled out as one tree.

    tasks = step_tasks.choose(s)          the seeded order through the learnable band
                                          (curriculum.py StepTasks)
    tree  = rollout(tasks, env, backend, key_of(s))    (mtrl.rollout.generator)

With several processes each rolls out its own share of the tasks, its keys offset
as that share's environment groups (mtrl/parallel/process_rollout.py). On-policy the
trainer calls `grow` with the current policy's backend; off-policy
(async_rollout.OffPolicyRollouts) it runs in a background thread, one step ahead.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax

from mtrl.parallel.process_rollout import is_multiprocess, local_tasks
from mtrl.rollout import RolloutConfig, rollout
from mtrl.rollout.backend import PolicyBackend
from mtrl.rollout.environment import Environment
from mtrl.rollout.tree import TreeRollout
from mtrl.training.grow.curriculum import StepTasks


@dataclasses.dataclass(frozen=True)
class GrowStage:
    """Everything the grow stage reads: the task chooser, the environment, the
    tokenizer and turn format, the rollout section and the rollout key of a step."""

    step_tasks: StepTasks
    env: Environment
    tokenizer: Any
    turn_format: Any
    rollout: RolloutConfig
    key_of: Callable[[int], jax.Array]  # RL step -> its rollout key (RunKeys.rollout)

    def grow(self, step: int, backend: PolicyBackend) -> TreeRollout:
        """Step `step`'s tree: its tasks rolled out with `backend`."""
        tasks = self.step_tasks.choose(step)
        first_group = None
        if is_multiprocess():  # this process's share; keys as one process's env groups
            tasks, index = local_tasks(tasks)
            first_group = index * self.rollout.env_groups
        return rollout(tasks, self.env, backend, self.tokenizer, self.rollout,
                       self.key_of(step), self.turn_format, first_group=first_group)
