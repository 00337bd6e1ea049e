"""The bookkeeping every environment shares, written once: a base class that checks
the protocol of a batched step and then calls the environment's own step.

    class MyEnv(TurnEnvironment):
        state_type = MyState            # branch states: `turn` (turns completed) and
                                        # `ended` (the episode is over on this branch)
        def reset(self, task): ...
        def step_branches(self, states, actions, turn): ...   # one StepResult each

`step` refuses, in one line naming the branch, what no environment may receive
(mtrl/rollout/environment.py): a batch whose states and joint actions differ in
number, a state of another type, a joint action without one completion per agent, a
turn that does not follow the branch's last, and any turn after the episode ended
(StepResult.ended); it also checks the environment answered every branch. In the
spirit of Tunix's BaseTaskEnv: the loop-facing protocol in the base class, the task's
logic in the subclass.
"""

from __future__ import annotations

import abc
from typing import Any, Sequence

from mtrl.rollout.environment import Environment, StepResult


def check_step(states: Sequence[Any], actions: Sequence[tuple[str, ...]], turn: int, *,
               num_agents: int, state_type: type) -> None:
    """One-line errors for a batch that breaks the step protocol (module docstring)."""
    if len(states) != len(actions):
        raise ValueError(f"{len(states)} states but {len(actions)} joint actions")
    if isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
        raise ValueError(f"turn must be an int >= 1 (turns are 1-based), got {turn!r}")
    for i, (state, action) in enumerate(zip(states, actions)):
        if not isinstance(state, state_type):
            raise TypeError(f"states[{i}] is {type(state).__name__}, not {state_type.__name__}")
        if len(action) != num_agents:
            raise ValueError(f"actions[{i}] has {len(action)} completions for "
                             f"{num_agents} agents")
        if state.turn != turn - 1:
            raise ValueError(f"states[{i}] has completed {state.turn} turns; cannot play "
                             f"turn {turn}")
        if state.ended:
            raise ValueError(f"states[{i}]: the branch's episode has ended; no later turn is "
                             "played on it (StepResult.ended)")


class TurnEnvironment(Environment):
    """An Environment whose `step` checks the protocol once (module docstring)."""

    state_type: type  # the branch state class (fields or properties `turn`, `ended`)

    def step(self, states: Sequence[Any], actions: Sequence[tuple[str, ...]],
             turn: int) -> list[StepResult]:
        check_step(states, actions, turn, num_agents=self.num_agents,
                   state_type=self.state_type)
        results = self.step_branches(list(states), [tuple(a) for a in actions], turn)
        if len(results) != len(states):
            raise RuntimeError(f"{type(self).__name__}.step_branches returned {len(results)} "
                               f"results for {len(states)} branches")
        return results

    @abc.abstractmethod
    def step_branches(self, states: list[Any], actions: list[tuple[str, ...]],
                      turn: int) -> list[StepResult]:
        """Scores one joint action per branch; the batch already follows the protocol."""
