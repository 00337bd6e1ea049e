"""A guessing task: an integer hidden strictly between two shown bounds."""

from __future__ import annotations

import dataclasses

from mtrl.envs.guess.prompts import GuessTemplates


@dataclasses.dataclass(frozen=True)
class GuessTask:
    """Guess `secret`, an integer with low < secret < high.

    task_id: "guess/<split>/<low>_<high>_<secret>".
    low, high: the bounds the prompt shows, both exclusive, so no shown number is ever
      the secret; the candidates are the high − low − 1 integers between them.
    """

    task_id: str
    low: int
    high: int
    secret: int

    def __post_init__(self):
        if not self.task_id:
            raise ValueError("GuessTask.task_id must be non-empty")
        for name in ("low", "high", "secret"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"GuessTask.{name} must be an int, got {value!r}")
        if not self.low < self.secret < self.high:
            raise ValueError(f"GuessTask.secret must lie strictly between low and high, got "
                             f"{self.low} < {self.secret} < {self.high}")

    @property
    def candidates(self) -> int:
        """How many integers the prompt leaves open: high − low − 1."""
        return self.high - self.low - 1

    @property
    def answer(self) -> str:
        """The right guess as text (the math environment's name for it)."""
        return str(self.secret)

    @property
    def prompt(self) -> str:
        """The task as the default templates ask it (the name transcripts use)."""
        return GuessTemplates().question.format(low=self.low, high=self.high)
