"""SFT demonstrations for the synthetic family: correct first-turn answers.

A demonstration is a task plus one completion per agent, in exactly the format an
agent is expected to output (a ```python fence around a tiny program). The prompt
is not part of it: the trainer renders each agent's prompt through the environment
(`env.reset(task)`), so role instructions live in one place.

One agent writes the entry point:      two agents split the work:
    ```python                              agent 1 (helper)   agent 2 (main)
    def f(x):                              ```python          ```python
        return 2*x+7                       def aux(x):        def f(x):
    ```                                        return 2*x         y = aux(x)
                                           ```                    return y+7
                                                              ```
The helper carries the term (the part the feedback disambiguates), the main
function calls it and adds the offset (the part the example shows). Main binds
aux's result before using it: the code environment's level reward counts a body
that is a single `return <expr with aux(...)>` as a thin wrapper of the helper.

The demonstrated answer is the true function, which the one example does not
determine: a policy fit to these demonstrations learns to spread its guesses over
the members that fit the example, landing near 1/|terms| turn-1 success (the 20%
band by default) and leaving turn 2 (with feedback) to RL.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from mtrl.data.synthetic.family import IntFunction, with_offset
from mtrl.data.synthetic.tasks import SyntheticTask
from mtrl.data.synthetic.terms import TERMS
from mtrl.envs.code.analysis import AUX_NAME as HELPER_NAME
from mtrl.envs.code.task import CodeTask

FENCE_OPEN = "```python\n"
FENCE_CLOSE = "```"


@dataclasses.dataclass(frozen=True)
class Demonstration:
    task: CodeTask
    completions: tuple[str, ...]  # one per agent, agent order

    def __post_init__(self):
        if not self.completions:
            raise ValueError("Demonstration needs at least one completion")


def fenced(program: str) -> str:
    return FENCE_OPEN + program + FENCE_CLOSE


def single_agent_completion(function: IntFunction, entry_point: str) -> str:
    return fenced(f"def {entry_point}(x):\n    return {function.expression}\n")


def helper_completion(function: IntFunction) -> str:
    """Agent 1: the term alone, as `aux(x)`."""
    return fenced(f"def {HELPER_NAME}(x):\n    return {TERMS.get(function.term).expression}\n")


def main_completion(function: IntFunction, entry_point: str) -> str:
    """Agent 2: the entry point, adding the offset to the helper's result."""
    result = with_offset("y", function.offset)
    return fenced(f"def {entry_point}(x):\n    y = {HELPER_NAME}(x)\n    return {result}\n")


def demonstration(item: SyntheticTask, num_agents: int) -> Demonstration:
    entry = item.task.entry_point
    if num_agents == 1:
        completions = (single_agent_completion(item.function, entry),)
    elif num_agents == 2:
        completions = (helper_completion(item.function), main_completion(item.function, entry))
    else:
        raise ValueError(f"num_agents must be 1 or 2, got {num_agents}")
    return Demonstration(item.task, completions)


def sft_demonstrations(tasks: Sequence[SyntheticTask], *, fraction: float = 0.5,
                       num_agents: int = 2, seed: int = 0) -> tuple[Demonstration, ...]:
    """Demonstrations for a seeded `fraction` of `tasks` (train tasks only), in
    the tasks' order."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    leaked = [t.task.task_id for t in tasks if t.split != "train"]
    if leaked:
        raise ValueError(f"demonstrations must come from train tasks, got {leaked[:3]}")
    count = round(fraction * len(tasks))
    chosen = np.random.default_rng([int(seed), 3]).choice(len(tasks), count, replace=False)
    return tuple(demonstration(tasks[int(i)], num_agents) for i in sorted(chosen))
