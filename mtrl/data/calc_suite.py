"""Calculator tasks as a task suite (`data.name = "calc"`, mtrl.data.suite): a
two-turn tool task whose answer needs the tool's output.

A task asks for a product of two integers, "What is 4827 * 391?" (MathTask: the
answer is the number). Its operands are too long for a small model to multiply in
its head, so an exact answer needs the tool: turn 1 runs ```python print(4827*391)```
in the tool environment's sandbox, turn 2 copies the printed number into
\\boxed{1887357}. MT-GRPO's setting (Zeng et al. 2025) at this scale: a turn that
calls the tool, then a turn that answers from its output.

data.options:
  seed            the tasks' seed (default 0, not the run's seed: runs with different
                  seeds train on the same tasks)
  digits          (d1, d2): the operands' digit counts (default (4, 3))
  direct_fraction share of the SFT demonstrations whose first turn answers at once,
                  without the tool, with the true product (default 0.0): a teacher
                  that sometimes skips the tool, so the warm start calls it in only
                  part of its samples and RL decides whether calls survive

Splits: num_train / num_eval / num_test tasks from independent seeded streams; a
validation or test question equal to a train question (or to an earlier held-out
one) is drawn again, so the splits are disjoint. SFT demonstrations, per train task:
the first prompt -> the call, and the second-turn prompt (a `Revision` holding the
call and the sandbox's own output, run through `env.step`) -> "\\boxed{answer}".
"""

from __future__ import annotations

import functools

import numpy as np

from mtrl.config.fields import check_choice
from mtrl.data.demonstrations import Revision
from mtrl.data.suite import SUITES, DataConfig, check_split
from mtrl.data.suite_options import check_generated_options
from mtrl.envs.math.task import MathTask

_OPTIONS = ("seed", "digits", "direct_fraction")
_STREAM = {"train": 0, "validation": 1, "test": 2, "direct": 3}


def question(a: int, b: int) -> str:
    return f"What is {a} * {b}?"


def call(a: int, b: int) -> str:
    """The first turn's demonstration: one calculator call."""
    return f"```python\nprint({a}*{b})\n```"


def answer(value: str) -> str:
    return f"\\boxed{{{value}}}"


class CalcSuite:
    task_type = MathTask

    def __init__(self, data: DataConfig, seed: int):
        del seed  # the tasks' seed is data.options.seed (module doc)
        check_generated_options("calc", data, _OPTIONS)
        self.seed = data.options.get("seed", 0)
        digits = tuple(data.options.get("digits", (4, 3)))
        if len(digits) != 2 or not all(isinstance(d, int) and 1 <= d <= 9 for d in digits):
            raise ValueError(f"config.data.options.digits: two ints in [1, 9], got {digits!r}")
        self.digits = digits
        self.direct_fraction = float(data.options.get("direct_fraction", 0.0))
        if not 0.0 <= self.direct_fraction <= 1.0:
            raise ValueError("config.data.options.direct_fraction must lie in [0, 1], got "
                             f"{self.direct_fraction!r}")
        self.data = data

    def _draw(self, split: str, count: int, exclude: frozenset) -> list[MathTask]:
        rng = np.random.default_rng([int(self.seed), _STREAM[split]])
        (d1, d2), seen, out = self.digits, set(exclude), []
        room = 9 * 10 ** (d1 - 1) * 9 * 10 ** (d2 - 1)
        if count + len(seen) > room // 2:
            raise ValueError(f"config.data: {count} {split} calc tasks of {self.digits} digits "
                             "leave too few distinct products; use more digits")
        while len(out) < count:
            a = int(rng.integers(10 ** (d1 - 1), 10 ** d1))
            b = int(rng.integers(10 ** (d2 - 1), 10 ** d2))
            if (a, b) in seen:
                continue
            seen.add((a, b))
            out.append(MathTask(task_id=f"calc/{split}/{len(out)}", question=question(a, b),
                                answer=str(a * b), solution=f"{a} * {b} = {a * b}"))
        return out

    @functools.cached_property
    def _train(self) -> list[MathTask]:
        return self._draw("train", self.data.num_train, frozenset())

    @functools.cached_property
    def _validation(self) -> list[MathTask]:
        return self._draw("validation", self.data.num_eval, _operands(self._train))

    @functools.cached_property
    def _test(self) -> list[MathTask]:
        if not self.data.test_split:
            return []
        return self._draw("test", self.data.num_test,
                          _operands(self._train) | _operands(self._validation))

    def tasks(self, split: str) -> list[MathTask]:
        return list({"train": lambda: self._train, "validation": lambda: self._validation,
                     "test": lambda: self._test}[check_split(split)]())

    def templates(self, name: str):
        from mtrl.envs.math.prompts import MathTemplates
        check_choice("templates", name, ("default",))
        return MathTemplates()

    def check_sft(self, sft, num_agents: int) -> None:
        if num_agents != 1:
            raise ValueError(f"config.env.num_agents: calc tasks have one agent, got {num_agents}")
        if sft.first_guess:
            raise ValueError("config.sft.first_guess: the calc suite has no first guess")

    def demonstrations(self, env, num_agents: int, sft) -> list[list[tuple]]:
        """[agent 0] -> (prompt, completion): per train task the call and the answer
        after its output (module doc); a direct_fraction share answers at turn 1."""
        self.check_sft(sft, num_agents)
        tasks = self.tasks("train")
        direct = (np.random.default_rng([int(self.seed), _STREAM["direct"]]).random(len(tasks))
                  < self.direct_fraction)
        started = [env.reset(task) for task in tasks]
        calls = [(call(*_pair(task)),) for task in tasks]
        results = env.step([state for state, _ in started], calls, 1)
        pairs = []
        for task, (_, (prompt,)), (completion,), result, skip in zip(
                tasks, started, calls, results, direct):
            if skip:
                pairs.append((prompt, answer(task.answer)))
                continue
            pairs.append((prompt, completion))
            if task.answer not in result.observations[0]:
                raise ValueError(f"calc: the tool's output for {task.question!r} lacks the "
                                 f"answer: {result.observations[0]!r}")
            pairs.append((Revision(prompt, ((completion, result.observations[0]),),
                                   reset=result.reset_context), answer(task.answer)))
        return [pairs]


def _pair(task: MathTask) -> tuple[int, int]:
    a, b = task.question.removeprefix("What is ").removesuffix("?").split(" * ")
    return int(a), int(b)


def _operands(tasks: list[MathTask]) -> frozenset:
    return frozenset(_pair(t) for t in tasks)


SUITES.register("calc")(CalcSuite)
