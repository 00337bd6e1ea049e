"""Guess a hidden integer: the task names the open interval the number lies in, each
wrong guess hears "<g> is too low." / "too high." (never the number), and the skill is
a search strategy, scored by success within the episode's turns."""

from mtrl.envs.guess.env import GuessEnv, GuessState
from mtrl.envs.guess.prompts import GuessTemplates, feedback, read_guess
from mtrl.envs.guess.task import GuessTask

__all__ = ["GuessEnv", "GuessState", "GuessTask", "GuessTemplates", "feedback", "read_guess"]
