"""The TextWorld engine behind immutable branch states: replay plus memo.

A branch's state is its game and the commands it played. The engine (TextWorld's
Inform 7 game run by its Z-machine interpreter, with TextWorld's fact tracker) is
stateful, so `GameEngine.play(history)` brings one engine instance to that history,
from where it stands when the history extends it, else from a reset, and memoizes
every prefix's `Outcome`. Tree rollouts repeat commands a lot (siblings sample the
same move), so most steps are dictionary hits.

Only admissible commands reach the engine (the environment checks), so meta
commands (quit, restart, undo, save) can never desynchronise it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import threading
import warnings

_ROOM = re.compile(r"-= .+? =-")
_SCORE_LINE = re.compile(r"^(?:>.*|.*Your score has just gone up.*|\s*\*\*\* The End \*\*\*"
                         r"|You scored .*|Would you like to RESTART.*)$", re.MULTILINE)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What the game shows after a history of commands."""

    text: str  # the engine's feedback, without banner, prompt and score lines
    score: int
    max_score: int
    won: bool
    lost: bool
    admissible: tuple[str, ...]  # commands the game accepts now (sorted)
    anchor: int  # 63-bit hash of the world facts: equal states, equal anchors
    moves: int


def clean_feedback(text: str, first: bool) -> str:
    """The readable part of the engine's text: on reset, from the room heading on
    (the banner and objective are dropped; the environment shows the objective);
    otherwise without the prompt and score lines; blank lines collapsed."""
    if first:
        match = _ROOM.search(text)
        text = text[match.start():] if match else text
    text = _SCORE_LINE.sub("", text)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return "\n".join(line for line in lines if line)


def facts_anchor(facts) -> int:
    """sha1 of the sorted fact strings, as a non-negative 63-bit int."""
    digest = hashlib.sha1("\n".join(sorted(str(f) for f in facts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


class GameEngine:
    """One compiled game; `play(history)` -> the Outcome after those commands."""

    def __init__(self, path: str):
        self.path = path
        self._env = None
        self._at: tuple[str, ...] | None = None  # the history the engine stands at
        self._memo: dict[tuple[str, ...], Outcome] = {}
        self._lock = threading.Lock()  # env.step_async runs steps on a thread
        self.engine_steps = 0  # commands actually executed (memo misses)

    def _start(self):
        import textworld
        infos = textworld.EnvInfos(admissible_commands=True, facts=True, won=True, lost=True,
                                   score=True, max_score=True, moves=True)
        with warnings.catch_warnings():
            # jericho does not know TextWorld's games; TextWorld tracks score and moves.
            warnings.filterwarnings("ignore", message=".*not fully supported")
            self._env = textworld.start(self.path, request_infos=infos)

    def play(self, history: tuple[str, ...]) -> Outcome:
        with self._lock:
            if history in self._memo:
                return self._memo[history]
            if self._env is None:
                self._start()
            at = self._at
            if at is None or history[:len(at)] != at:
                self._record((), self._env.reset(), first=True)
                at = ()
            for i in range(len(at), len(history)):
                state, _, _ = self._env.step(history[i])
                self.engine_steps += 1
                self._record(history[:i + 1], state, first=False)
            self._at = history
            return self._memo[history]

    def _record(self, history, state, first: bool) -> None:
        self._at = history
        if history in self._memo:
            return
        self._memo[history] = Outcome(
            text=clean_feedback(state.feedback or "", first),
            score=int(state.score or 0), max_score=int(state.max_score or 0),
            won=bool(state.won), lost=bool(state.lost),
            admissible=tuple(sorted(state.admissible_commands or ())),
            anchor=facts_anchor(state.facts or ()), moves=int(state.moves or 0))

    def close(self) -> None:
        with self._lock:
            if self._env is not None:
                self._env.close()
                self._env = None
                self._at = None
