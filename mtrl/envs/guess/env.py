"""The guessing environment, one or N agents.

A step, for a batch of branches (one joint action each):
1. each agent's reply is cleaned (bounded, valid UTF-8) and read as a guess
   (prompts.read_guess: the math environment's answer reader, integers only);
2. the team's guess is the plurality of the agents' guesses, ties to the
   highest-numbered agent (the math environment's `team_answer`);
3. reward = 1 when the team's guess is the secret, else 0. A later success is not
   discounted here: the outcome alone is the reward, and `rollout.discount` (γ in
   R_t = r_t + γ·mean(children)) is where a run prefers finding it sooner;
4. the episode ends at the first right guess (`ended`); one without runs to the
   last turn, so success is "found within T turns";
5. every agent hears the verdict on the team's guess (prompts.feedback: too low, too
   high, out of range, no integer) with the question again. The rollout appends it to
   the agent's whole history (the math environment's history mode "full"), so turn
   t+1 sees every earlier guess and verdict: the interval left is in the context,
   never stated.

Deterministic given the task and the replies. Step info: `correct`, `answer_id`
(UFO's repeat penalty), `void` per agent (no integer), `truth` (the secret as text),
plus `guesses` and `team_guess` for transcripts.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mtrl.config.fields import check_int
from mtrl.envs.base import TurnEnvironment
from mtrl.envs.guess.prompts import GuessTemplates, feedback, read_guess
from mtrl.envs.guess.task import GuessTask
from mtrl.envs.math.env import MAX_MATH_COMPLETION_CHARS, answer_id, team_answer
from mtrl.envs.text import decode_completion
from mtrl.rollout.environment import StepResult


@dataclasses.dataclass(frozen=True)
class GuessState:
    """One branch. Immutable: children share their parent's."""

    task: GuessTask
    turn: int = 0  # turns completed
    solved: bool = False
    guesses: tuple[int | None, ...] = ()  # the team's guess per turn

    @property
    def ended(self) -> bool:
        return self.solved


class GuessEnv(TurnEnvironment):
    """The guessing environment (module docstring)."""

    state_type = GuessState
    info_keys = frozenset({"correct", "answer_id", "void", "truth"})

    def __init__(self, num_agents: int = 1, templates: GuessTemplates = GuessTemplates(),
                 max_completion_chars: int = MAX_MATH_COMPLETION_CHARS):
        check_int("num_agents", num_agents, 1)
        check_int("max_completion_chars", max_completion_chars, 1)
        self.num_agents, self.templates = num_agents, templates
        self.max_completion_chars = max_completion_chars

    def reset(self, task: GuessTask) -> tuple[GuessState, tuple[str, ...]]:
        if not isinstance(task, GuessTask):
            raise TypeError(f"GuessEnv.reset expects a GuessTask, got {type(task).__name__}")
        prompt = self.templates.question.format(low=task.low, high=task.high)
        return GuessState(task), (prompt,) * self.num_agents

    def step_branches(self, states: list[GuessState], actions: list[tuple[str, ...]],
                      turn: int) -> list[StepResult]:
        return [self._step_one(state, action, turn) for state, action in zip(states, actions)]

    def _step_one(self, state: GuessState, action: tuple[str, ...], turn: int) -> StepResult:
        guesses = tuple(read_guess(decode_completion(a, self.max_completion_chars))
                        for a in action)
        team = team_answer([None if g is None else str(g) for g in guesses])
        guess = None if team is None else int(team)
        correct = guess == state.task.secret
        task = state.task
        text = feedback(self.templates, task.low, task.high, task.secret, guess)
        info: dict[str, Any] = {
            "correct": correct, "answer_id": answer_id(team),
            "void": tuple(g is None for g in guesses), "truth": state.task.answer,
            "guesses": guesses, "team_guess": guess,
        }
        child = GuessState(state.task, turn, correct, state.guesses + (guess,))
        components = {"correct": float(correct),
                      "answered": sum(g is not None for g in guesses) / self.num_agents}
        return StepResult(reward=float(correct), done=correct,
                          observations=(text,) * self.num_agents, state=child,
                          components=components, info=info, ended=correct)
