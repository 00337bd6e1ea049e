"""Guessing a hidden integer as a task suite (`data.name = "guess"`, mtrl.data.suite),
played by the `guess` environment (mtrl/envs/guess/).

A task: "Guess my secret integer. It is greater than 16 and less than 41." Each wrong
guess hears "28 is too high." (or too low, or out of range) with the question again,
never the number, so a policy finds it within T turns only by searching: reading the
verdicts of its earlier guesses and narrowing the interval they leave.

data.options:
  lows    (first, last) lower bounds a task may show (default (0, 99))
  widths  (first, last) numbers of candidates between the bounds (default (8, 32):
          binary search needs at most ⌈log2(33)⌉ = 6 guesses)
  seed    the split's seed (default 0, not the run's: runs with different seeds
          share the tasks)

Splits (mtrl/data/guess_tasks.py): validation and test own held-out lower bounds and
held-out secrets, so no held-out question occurs in training and no held-out answer
is a train secret. num_eval / num_test tasks exactly, train at most num_train
(the split names are not read; an empty data.test_split means no test split).

Demonstrations (train tasks only), from a binary-search teacher played through the
environment: for a seeded sft.fraction of the tasks the first prompt -> the midpoint;
for a seeded sft.revision_fraction (per agent) the later turns, each a `Revision`
holding every earlier guess with the environment's verdict -> the midpoint of the
interval the verdicts leave. sft.resubmit_fraction (per agent) makes the teacher
weak: that share of the later-turn rows repeat the previous guess.
"""

from __future__ import annotations

import functools

import numpy as np

from mtrl.config.fields import check_choice
from mtrl.data.demonstrations import Revision, per_agent
from mtrl.data.guess_tasks import GuessSpace, bisect_guesses, make_splits
from mtrl.data.suite import SUITES, DataConfig
from mtrl.data.suite_options import check_generated_options
from mtrl.envs.guess.prompts import GuessTemplates
from mtrl.envs.guess.task import GuessTask

_OPTIONS = ("lows", "widths", "seed")


class GuessSuite:
    task_type = GuessTask

    def __init__(self, data: DataConfig, seed: int):
        del seed  # the split's seed is data.options.seed (module doc)
        check_generated_options("guess", data, _OPTIONS)
        self.seed = data.options.get("seed", 0)
        self.space = GuessSpace(**{k: tuple(v) if isinstance(v, list) else v
                                   for k, v in data.options.items() if k != "seed"})
        self.data = data

    @functools.cached_property
    def _splits(self) -> dict[str, list[GuessTask]]:
        d = self.data
        return make_splits(self.space, self.seed, {"train": d.num_train,
                                                   "validation": d.num_eval,
                                                   "test": d.num_test})

    def tasks(self, split: str) -> list[GuessTask]:
        if not self.data.split_spec(split):  # e.g. test_split "": no test split
            return []
        return self._splits[split]

    def templates(self, name: str) -> GuessTemplates:
        check_choice("templates", name, ("default",))
        return GuessTemplates()

    def check_sft(self, sft, num_agents: int) -> None:
        if sft.first_guess:
            raise ValueError("config.sft.first_guess: guess has no first guess (it is the "
                             "integer-function family's)")
        per_agent(sft.revision_fraction, num_agents, "revision_fraction")
        per_agent(sft.resubmit_fraction, num_agents, "resubmit_fraction")

    def demonstrations(self, env, num_agents: int, sft) -> list[list[tuple]]:
        """[agent] -> (prompt, guess): the teacher's turns (module doc), train only."""
        self.check_sft(sft, num_agents)
        return teacher_rows(env, self.tasks("train"), num_agents, sft, self.seed)


def teacher_rows(env, tasks: list[GuessTask], num_agents: int, sft, seed: int
                 ) -> list[list[tuple]]:
    """The binary-search teacher's rows over `tasks` (GuessSuite.demonstrations); every
    observation is `env`'s own answer to the teacher's guess."""
    if env.num_agents != num_agents:
        raise ValueError(f"config.env.num_agents: the environment plays {env.num_agents} "
                         f"agents, the demonstrations were asked for {num_agents}")
    revise = per_agent(sft.revision_fraction, num_agents, "revision_fraction")
    resubmit = per_agent(sft.resubmit_fraction, num_agents, "resubmit_fraction")
    rng = np.random.default_rng([int(seed), 71])
    first = rng.random(len(tasks)) < sft.fraction
    later = rng.random((len(tasks), num_agents)) < np.asarray(revise)
    pairs = [[] for _ in range(num_agents)]
    for i, task in enumerate(tasks):
        state, prompts = env.reset(task)
        exchanges = [[] for _ in range(num_agents)]
        guesses = bisect_guesses(task)
        for turn, guess in enumerate(guesses, start=1):
            for a in range(num_agents):
                if turn == 1 and first[i]:
                    pairs[a].append((prompts[a], str(guess)))
                elif turn > 1 and later[i, a]:
                    lazy = rng.random() < resubmit[a]
                    answer = exchanges[a][-1][0] if lazy else str(guess)
                    pairs[a].append((Revision(prompts[a], tuple(exchanges[a])), answer))
            if turn == len(guesses):
                break  # the right guess: the episode ends
            result, = env.step([state], [(str(guess),) * num_agents], turn)
            state = result.state
            for a in range(num_agents):
                exchanges[a].append((str(guess), result.observations[a]))
    return pairs


SUITES.register("guess")(GuessSuite)
