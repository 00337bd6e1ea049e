"""Two-operand arithmetic as a task suite (`data.name = "arith"`, mtrl.data.suite):
short questions with one integer answer, for a small pretrained chat model's band.

A task asks "What is 47 + 38?" (a MathTask: the answer is the number). It is played
by the math environment (`env.name = "math"`); with `env.feedback_mode = "direction"`
a wrong answer is told which side of the truth it lies on ("90 is too high.") with
the question repeated, so a second attempt can use what the first one learned.

data.options:
  kind   the operation and operand ranges (KINDS): "add2" (default; a + b with
         a, b in 10-99), "sub2" (a - b, a, b in 10-99), "mul1x2" (a * b, a in 2-9,
         b in 10-99), "add3" (a + b with a, b in 100-999)
  seed   the split's seed (default 0, not the run's: runs with different seeds
         share the tasks)

Splits hold out operand sets: every unordered pair {a, b} goes to exactly one split
(dealt by `seed`: test first, then validation, then train), so no test question
occurs in training in either operand order. num_test / num_eval tasks exactly,
train at most num_train (the rest). SFT demonstrations (if a run asks for them): the
first prompt -> the number.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import operator
from typing import Callable

import numpy as np

from mtrl.config.fields import check_choice
from mtrl.data.suite import SUITES, DataConfig, check_split
from mtrl.data.suite_options import check_generated_options
from mtrl.envs.math.prompts import MathTemplates
from mtrl.envs.math.task import MathTask

_OPTIONS = ("kind", "seed")


@dataclasses.dataclass(frozen=True)
class Kind:
    """An operation over two operand ranges (inclusive) and how a question reads."""

    symbol: str
    apply: Callable[[int, int], int]
    first: tuple[int, int]
    second: tuple[int, int]
    commutative: bool


KINDS = {
    "add2": Kind("+", operator.add, (10, 99), (10, 99), True),
    "sub2": Kind("-", operator.sub, (10, 99), (10, 99), False),
    "mul1x2": Kind("*", operator.mul, (2, 9), (10, 99), False),
    "add3": Kind("+", operator.add, (100, 999), (100, 999), True),
}


def question(kind: Kind, a: int, b: int) -> str:
    return f"What is {a} {kind.symbol} {b}?"


def operand_sets(kind: Kind) -> list[tuple[int, int]]:
    """Every operand pair with its mirror image folded in: (a, b) with a <= b when
    both ranges are one (one set per {a, b}), else every pair in range order. A set
    is what a split owns: its question in either order stays in that split."""
    lo1, hi1 = kind.first
    lo2, hi2 = kind.second
    pairs = itertools.product(range(lo1, hi1 + 1), range(lo2, hi2 + 1))
    if kind.first == kind.second:
        return [(a, b) for a, b in pairs if a <= b]
    return list(pairs)


def questions_of(kind: Kind, pair: tuple[int, int], rng: np.random.Generator
                 ) -> tuple[int, int]:
    """The order a pair is asked in: a commutative kind shows either order."""
    a, b = pair
    if kind.commutative and rng.random() < 0.5:
        return b, a
    if not kind.commutative and kind.first == kind.second and rng.random() < 0.5:
        return b, a  # sub2: both a - b and b - a come from the set {a, b}
    return a, b


# The question alone: the system prompt (config.chat.system_prompts) says how to
# answer; the direction feedback repeats the question after its verdict.
ARITH_TEMPLATES = MathTemplates(first="{question}")


class ArithSuite:
    task_type = MathTask

    def __init__(self, data: DataConfig, seed: int):
        del seed  # the split's seed is data.options.seed (module doc)
        check_generated_options("arith", data, _OPTIONS)
        name = data.options.get("kind", "add2")
        check_choice("config.data.options.kind", name, sorted(KINDS))
        self.seed = data.options.get("seed", 0)
        self.kind_name, self.kind, self.data = name, KINDS[name], data
        room = len(operand_sets(self.kind))
        if data.num_test + data.num_eval >= room:
            raise ValueError(f"config.data: num_test + num_eval = "
                             f"{data.num_test + data.num_eval} leave no train task of "
                             f"{room} operand sets ({name})")

    @functools.cached_property
    def _splits(self) -> dict[str, list[MathTask]]:
        rng = np.random.default_rng([int(self.seed), 38])
        sets = operand_sets(self.kind)
        order = rng.permutation(len(sets))
        d = self.data
        bounds = {"test": (0, d.num_test),
                  "validation": (d.num_test, d.num_test + d.num_eval),
                  "train": (d.num_test + d.num_eval,
                            min(len(sets), d.num_test + d.num_eval + d.num_train))}
        out = {}
        for split, (start, end) in bounds.items():
            tasks = []
            for index in order[start:end]:
                a, b = questions_of(self.kind, sets[index], rng)
                tasks.append(MathTask(task_id=f"arith/{self.kind_name}/{split}/{a}_{b}",
                                      question=question(self.kind, a, b),
                                      answer=str(self.kind.apply(a, b))))
            out[split] = tasks
        return out

    def tasks(self, split: str) -> list[MathTask]:
        return self._splits[check_split(split)]

    def templates(self, name: str) -> MathTemplates:
        check_choice("templates", name, ("default",))
        return ARITH_TEMPLATES

    def check_sft(self, sft, num_agents: int) -> None:
        if sft.first_guess:
            raise ValueError("config.sft.first_guess: arith has no first guess (it is the "
                             "integer-function family's)")

    def demonstrations(self, env, num_agents: int, sft) -> list[list[tuple]]:
        """[agent] -> (first prompt, the number): train tasks only."""
        self.check_sft(sft, num_agents)
        pairs = [[] for _ in range(num_agents)]
        for task in self.tasks("train"):
            _, prompts = env.reset(task)
            for a in range(num_agents):
                pairs[a].append((prompts[a], task.answer))
        return pairs


SUITES.register("arith")(ArithSuite)
