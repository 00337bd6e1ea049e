"""Multi-turn math environment (GSM8K-style word problems), one or N agents.

A step, for a batch of branches (one joint action each):
1. each agent's completion is cleaned (bounded, valid UTF-8) and its final answer
   extracted (answer.py: \\boxed{}, `####`, last number; normalised);
2. the team's answer is the plurality of the agents' answers, ties going to the
   highest-numbered agent (with one agent: its answer). As in CodeEnv, where the
   last agent writes the entry point, the last agent has the final word;
3. reward = 1 if the team's answer equals the ground truth exactly (after
   normalisation), else 0;
4. the episode ends at the first correct answer (UFO's rule): the step reports
   `ended` (and `done`), and the generator plays no later turn on that branch
   (mtrl/rollout/environment.py); an episode without a correct answer runs to the last turn;
5. each agent's next observation comes from the feedback mode (prompts.py); history
   mode "full" appends it, "last" sends a fresh prompt with the previous response.

Step info (docs/methods.md): `correct` (UFO, reward recipe), `answer_id` (UFO's
repeat penalty), `void` per agent (no answer found: SimpleTIR's filter), `truth`
(the ground-truth answer text: the trainer scores it for IGPO, training/score/answer_probs.py),
plus `answers`, `team_answer` for transcripts.
"""

from __future__ import annotations

import collections
import dataclasses
import zlib
from typing import Any, Sequence

from mtrl.config.fields import check_choice, check_int
from mtrl.envs.math.task import MathTask
from mtrl.envs.base import TurnEnvironment
from mtrl.rollout.environment import StepResult
from mtrl.envs.text import decode_completion
from mtrl.envs.math.answer import extract_answer, normalize_number
from mtrl.envs.math.prompts import MATH_FEEDBACK, FeedbackInput, MathTemplates, first_prompt

MATH_HISTORY_MODES = ("full", "last")
# Answers live at the end of a completion; a cap keeps regex work bounded on 100 KB
# of garbage while never cutting a completion the sampler can produce.
MAX_MATH_COMPLETION_CHARS = 16_000


@dataclasses.dataclass(frozen=True)
class MathEnvConfig:
    num_agents: int = 1
    feedback_mode: str = "unary"  # in MATH_FEEDBACK: unary | correctness | plain | direction
    history_mode: str = "full"  # "full" | "last"
    templates: MathTemplates = MathTemplates()
    max_completion_chars: int = MAX_MATH_COMPLETION_CHARS

    def __post_init__(self):
        check_int("num_agents", self.num_agents, 1)
        check_choice("feedback_mode", self.feedback_mode, MATH_FEEDBACK)
        check_choice("history_mode", self.history_mode, MATH_HISTORY_MODES)
        if self.max_completion_chars < 1:
            raise ValueError("max_completion_chars must be positive")


@dataclasses.dataclass(frozen=True)
class MathBranchState:
    """One branch. Immutable: children share their parent's."""

    task: MathTask
    turn: int  # turns completed (0 after reset)
    solved: bool = False  # a correct team answer was given on this branch
    answers: tuple[tuple[str | None, ...], ...] = ()  # [turn][agent] extracted answers

    @property
    def ended(self) -> bool:
        """The episode ends at its first correct answer."""
        return self.solved


def team_answer(answers: Sequence[str | None]) -> str | None:
    """Plurality of the non-missing answers; ties go to the highest-numbered agent."""
    given = [(a, ans) for a, ans in enumerate(answers) if ans is not None]
    if not given:
        return None
    counts = collections.Counter(ans for _, ans in given)
    top = max(counts.values())
    return next(ans for _, ans in reversed(given) if counts[ans] == top)


def answer_id(answer: str | None) -> int:
    return zlib.crc32(answer.encode()) if answer is not None else 0


class MathEnv(TurnEnvironment):
    """Math environment (module docstring)."""

    state_type = MathBranchState
    info_keys = frozenset({"correct", "answer_id", "void", "truth"})

    def __init__(self, config: MathEnvConfig = MathEnvConfig()):
        self.config = config
        self.num_agents = config.num_agents
        self._feedback = MATH_FEEDBACK.get(config.feedback_mode)

    def reset(self, task: MathTask) -> tuple[MathBranchState, tuple[str, ...]]:
        if not isinstance(task, MathTask):
            raise TypeError(f"MathEnv.reset expects a MathTask, got {type(task).__name__}")
        return MathBranchState(task=task, turn=0), self._first(task)

    def _first(self, task: MathTask) -> tuple[str, ...]:
        return tuple(first_prompt(self.config.templates, task.question, a, self.num_agents)
                     for a in range(self.num_agents))

    def step_branches(self, states: list[MathBranchState], actions: list[tuple[str, ...]],
                      turn: int) -> list[StepResult]:
        return [self._step_one(state, action, turn) for state, action in zip(states, actions)]

    def _step_one(self, state: MathBranchState, action: tuple[str, ...], turn: int
                  ) -> StepResult:
        cfg = self.config
        texts = tuple(decode_completion(a, cfg.max_completion_chars) for a in action)
        answers = tuple(extract_answer(t) for t in texts)
        team = team_answer(answers)
        truth = normalize_number(state.task.answer)
        correct = team is not None and team == truth
        child = MathBranchState(task=state.task, turn=turn, solved=correct,
                                answers=state.answers + (answers,))
        info: dict[str, Any] = {
            "correct": correct, "answer_id": answer_id(team),
            "void": tuple(a is None for a in answers), "truth": state.task.answer,
            "answers": answers, "team_answer": team,
        }
        if correct:
            feedback = (cfg.templates.solved,) * self.num_agents
            reward = 1.0
        else:
            feedback = tuple(self._feedback(FeedbackInput(
                agent=a, answers=answers, correct=False, templates=cfg.templates,
                truth=truth, question=state.task.question))
                for a in range(self.num_agents))
            reward = 0.0
        if cfg.history_mode == "last":
            first = self._first(state.task)
            observations = tuple(cfg.templates.last.format(first=first[a], response=texts[a],
                                                           feedback=feedback[a])
                                 for a in range(self.num_agents))
        else:
            observations = feedback
        components = {"correct": float(correct),
                      "answered": sum(a is not None for a in answers) / self.num_agents}
        return StepResult(reward=reward, done=correct, observations=observations,
                          state=child, components=components, info=info,
                          reset_context=cfg.history_mode == "last", ended=correct)
