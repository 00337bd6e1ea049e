"""TextWorld games as a task suite (`data.name = "textworld"`, mtrl.data.suite).

data.options:
  challenges  "challenge:level" names cycled through to make games (games.py;
              default: coin collector levels 1-2 and treasure hunter level 1, wins in
              one or two moves)
  seed        the games' seed (default 0, not the run's seed: runs with different
              seeds train on the same games, so their spread is the training's)
  cache_dir   where compiled games are kept ("" : $MTRL_TEXTWORLD_CACHE or
              ~/.cache/mtrl/textworld)

Splits: data.num_train train games, data.num_eval validation ("heldout") games,
data.num_test test games, from disjoint seed ranges with no held-out game equal in
content to a train game (games.make_split). SFT demonstrations: every step of each
train game's walkthrough, the prompt being the environment's observation at that
point (the agent is single: num_agents = 1).
"""

from __future__ import annotations

import functools
import random

from mtrl.data.suite import SUITES, DataConfig, check_split
from mtrl.data.suite_options import check_generated_options
from mtrl.envs.textworld.games import (DEFAULT_CHALLENGES, GameTask, check_challenge,
                                       default_cache_dir, make_split)

_SPLITS = {"train": ("train",), "validation": ("heldout", "validation"), "test": ("test",)}
_OPTIONS = ("challenges", "seed", "cache_dir")


class TextWorldSuite:
    task_type = GameTask

    def __init__(self, data: DataConfig, seed: int):
        del seed  # the games' seed is data.options.seed (module doc)
        check_generated_options("textworld", data, _OPTIONS, items="games")
        self.challenges = tuple(data.options.get("challenges", DEFAULT_CHALLENGES))
        for challenge in self.challenges:
            try:
                check_challenge(challenge)
            except ValueError as e:
                raise ValueError(f"config.data.options.challenges: {e}") from None
        self.seed = data.options.get("seed", 0)
        self.cache_dir = data.options.get("cache_dir") or default_cache_dir()
        for split, spec in (("train", data.train_split), ("validation", data.eval_split),
                            ("test", data.test_split)):
            if spec and spec not in _SPLITS[split]:
                raise ValueError(f"config.data: the textworld {split} split is named "
                                 f"{_SPLITS[split][0]!r}, got {spec!r}")
        self.data = data

    @functools.cached_property
    def _train(self) -> list[GameTask]:
        return self._split("train", self.data.num_train, frozenset())

    def _split(self, split: str, count: int, exclude: frozenset) -> list[GameTask]:
        return make_split(split, count, self.challenges, self.cache_dir, seed=self.seed,
                          exclude=exclude)

    @functools.cached_property
    def _validation(self) -> list[GameTask]:
        return self._split("validation", self.data.num_eval,
                           frozenset(t.content_key for t in self._train))

    @functools.cached_property
    def _test(self) -> list[GameTask]:
        if not self.data.test_split:
            return []
        seen = frozenset(t.content_key for t in self._train + self._validation)
        return self._split("test", self.data.num_test, seen)

    def tasks(self, split: str) -> list:
        return list({"train": lambda: self._train, "validation": lambda: self._validation,
                     "test": lambda: self._test}[check_split(split)]())

    def templates(self, name: str):
        raise ValueError(f"the textworld suite has no code prompt templates (asked for "
                         f"{name!r}); use env.name=textworld")

    def check_sft(self, sft, num_agents: int) -> None:
        if num_agents != 1:
            raise ValueError(f"config.env.num_agents: textworld games have one player, got "
                             f"{num_agents}")
        if sft.first_guess:
            raise ValueError("config.sft.first_guess: the textworld suite has no first guess")

    def demonstrations(self, env, num_agents: int, sft) -> list[list[tuple]]:
        """[agent 0] -> (observation, walkthrough command) for every walkthrough step
        of sft.fraction of the train games; a walkthrough that does not win its game
        is an error (the games or the engine changed)."""
        from mtrl.envs.textworld.env import play
        self.check_sft(sft, num_agents)
        games = list(self._train)
        if sft.fraction < 1.0:
            games = random.Random(self.seed).sample(games, max(1, round(sft.fraction * len(games))))
        pairs = []
        for game in games:
            _, (prompt,) = env.reset(game)
            results = play(env, game, game.walkthrough)
            if not results or not results[-1].done:
                raise ValueError(f"the walkthrough of {game.name} does not win it")
            for command, result in zip(game.walkthrough, results):
                pairs.append((prompt, command))
                prompt = result.observations[0]
        return [pairs]


SUITES.register("textworld")(TextWorldSuite)
