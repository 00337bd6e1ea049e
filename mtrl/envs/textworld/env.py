"""Text games on the real TextWorld engine as an mtrl Environment (one agent).

Each task is a compiled game (games.py). The agent's completion is read as one
command (commands.py); a command the game admits is played on the engine
(engine.py), anything else is answered with a one-line reason and leaves the world
as it was. Rewards, per step:

    r_t = (score_t − score_{t−1}) / max_score          intermediate score changes
          + lose_reward                  on the step that loses the game
          − invalid_penalty              on a command the game does not admit

so a won game's rewards sum to 1 (less penalties). `done` is true on the step that
wins (the evaluation reads `done` as success). The step that wins, loses, or uses
the last of `max_moves` ends the episode (`ended`): the generator plays no later
turn on that branch (mtrl/rollout/environment.py), so no post-game turn is generated, scored
or trained.
Step info `anchor_id` is a hash of the world facts after the step (GiGPO's anchor
state: steps from equal states group across a task's trajectories, e.g. after a
"look" or a refused command the state, and so the anchor, is unchanged).

Observation (history "last", a whole fresh prompt each turn, so every turn's prompt
carries the goal and is short): the goal, the game's latest text (at most
`feedback_chars`) and the admissible commands (without `hidden_verbs`, which the
game still accepts). History "full": later observations append the text and the
commands to the branch's history instead.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from mtrl.config.fields import check_choice, check_int
from mtrl.envs.base import TurnEnvironment
from mtrl.rollout.environment import StepResult
from mtrl.envs.textworld.commands import MAX_COMMAND_CHARS, match_admissible, parse_command
from mtrl.envs.textworld.engine import GameEngine, Outcome
from mtrl.envs.textworld.games import GameTask

HISTORY_MODES = ("last", "full")


@dataclasses.dataclass(frozen=True)
class TextWorldEnvConfig:
    """env.options of `env.name = "textworld"` (see the module doc for the reward)."""

    history: str = "last"
    feedback_chars: int = 300
    hidden_verbs: tuple = ("examine", "look", "inventory")
    invalid_penalty: float = 0.05
    lose_reward: float = -1.0
    max_moves: int = 20  # the episode's move limit: then the game is over, lost
    max_command_chars: int = MAX_COMMAND_CHARS

    def __post_init__(self):
        check_choice("history", self.history, HISTORY_MODES)
        for name in ("feedback_chars", "max_moves", "max_command_chars"):
            check_int(name, getattr(self, name), 1)
        if not isinstance(self.hidden_verbs, (tuple, list)) or not all(
                isinstance(v, str) for v in self.hidden_verbs):
            raise ValueError(f"hidden_verbs must be a list of words, got {self.hidden_verbs!r}")
        object.__setattr__(self, "hidden_verbs", tuple(self.hidden_verbs))
        if not self.invalid_penalty >= 0 or not self.lose_reward <= 0:
            raise ValueError("invalid_penalty must be >= 0 and lose_reward <= 0, got "
                             f"{self.invalid_penalty!r}, {self.lose_reward!r}")


@dataclasses.dataclass(frozen=True)
class GameState:
    """A branch: its game, the admitted commands played, every move made (one a turn)
    and whether the game is over (won, lost or out of moves)."""

    task: GameTask
    history: tuple[str, ...] = ()
    moves: int = 0
    out_of_moves: bool = False
    ended: bool = False

    @property
    def turn(self) -> int:
        """Turns completed: every turn makes one move (a refused command too)."""
        return self.moves


class TextWorldEnv(TurnEnvironment):
    num_agents = 1
    state_type = GameState
    info_keys = frozenset({"anchor_id", "correct", "won", "lost", "valid"})

    def __init__(self, config: TextWorldEnvConfig = TextWorldEnvConfig()):
        self.config = config
        self._engines: dict[str, GameEngine] = {}

    def engine(self, task: GameTask) -> GameEngine:
        if task.path not in self._engines:
            self._engines[task.path] = GameEngine(task.path)
        return self._engines[task.path]

    def outcome(self, state: GameState) -> Outcome:
        return self.engine(state.task).play(state.history)

    def reset(self, task: GameTask) -> tuple[GameState, tuple[str, ...]]:
        state = GameState(task)
        return state, (self.prompt(state, self.outcome(state).text),)

    def prompt(self, state: GameState, text: str) -> str:
        """The goal, the game's text and the commands: a whole turn's prompt."""
        return f"Goal: {state.task.objective}\n{self.view(state, text)}"

    def view(self, state: GameState, text: str) -> str:
        outcome = self.outcome(state)
        text = text[:self.config.feedback_chars]
        if outcome.won or outcome.lost or state.out_of_moves:
            return text if text.endswith("The game is over.") else f"{text}\nThe game is over."
        shown = [c for c in outcome.admissible
                 if c.split(" ", 1)[0] not in self.config.hidden_verbs]
        return f"{text}\nCommands: {' | '.join(shown)}"

    def step_branches(self, states: list[GameState], actions: list[tuple[str, ...]],
                      turn: int) -> list[StepResult]:
        del turn  # the base class checked it against the state's moves
        return [self._step(state, action[0]) for state, action in zip(states, actions)]

    def _step(self, state: GameState, text: str) -> StepResult:
        before = self.outcome(state)
        command, reason = parse_command(text, self.config.max_command_chars)
        chosen = match_admissible(command, before.admissible) if command else None
        if chosen is None:
            reason = reason or f"'{command[:60]}' is not a command you can use here."
            child = self._moved(state, state.history)
            return self._result(child, before, -self.config.invalid_penalty, reason,
                                valid=False)
        child = self._moved(state, state.history + (chosen,))
        after = self.outcome(child)
        reward = (after.score - before.score) / max(after.max_score, 1)
        if after.lost:
            reward += self.config.lose_reward
        return self._result(child, after, reward, after.text, valid=True)

    def _moved(self, state: GameState, history: tuple[str, ...]) -> GameState:
        moves = state.moves + 1
        return GameState(state.task, history, moves, moves >= self.config.max_moves)

    def _result(self, state: GameState, outcome: Outcome, reward: float, text: str,
                valid: bool) -> StepResult:
        lost = outcome.lost or (state.out_of_moves and not outcome.won)
        state = dataclasses.replace(state, ended=outcome.won or lost)
        if state.out_of_moves and not outcome.won:
            text = f"{text}\nYou are out of moves."
        observation = (self.prompt(state, text) if self.config.history == "last"
                       else self.view(state, text))
        return StepResult(
            reward=float(reward), done=outcome.won, observations=(observation,), state=state,
            components={"won": float(outcome.won), "lost": float(lost),
                        "invalid": float(not valid), "score": float(outcome.score)},
            info={"anchor_id": outcome.anchor, "correct": outcome.won, "won": outcome.won,
                  "lost": lost, "valid": valid},
            reset_context=self.config.history == "last", ended=outcome.won or lost)

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close()
        self._engines.clear()

    @property
    def engine_steps(self) -> int:
        return sum(e.engine_steps for e in self._engines.values())


def play(env: TextWorldEnv, task: GameTask, commands: Sequence[str]) -> list[StepResult]:
    """The step results of `commands` played in order from the game's start."""
    state, _ = env.reset(task)
    out = []
    for command in commands:
        (result,) = env.step([state], [(command,)], len(out) + 1)
        out.append(result)
        state = result.state
    return out


