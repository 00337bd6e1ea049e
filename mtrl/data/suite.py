"""The task-suite seam: what a run needs from its data, behind one protocol.

A suite answers four questions, and nothing else in the library asks them of a data
set by name:

    suite.tasks(split)              the tasks of "train", "validation" or "test"
    suite.templates(name)           the prompt templates called `name` (env.templates)
    suite.check_sft(sft, agents)    one-line errors for SFT options it cannot honour
    suite.demonstrations(env, agents, sft)   SFT rows: [agent] -> (prompt, completion)

declares the type of its tasks (`task_type`: an environment registered to play it,
envs/registry.py `plays`, is the only kind a run may pair it with),

and may declare extra test splits (`ExtraTestSplits`: suite.extra_test_splits()).

The splits are disjoint: train trains, validation chooses the best checkpoint, test
is evaluated once at the end for the chosen checkpoint (empty list: no test split).
A demonstration's prompt is the environment's own observation (`env.reset`), so an
SFT row's tokens are those a rollout sees (`mtrl.rollout.formatting` renders both).

Suites register a builder under a name (SUITES, docs/design.md section 6 rule 10):

    builder(data: DataConfig, seed: int) -> TaskSuite

Suites in modules of their own register themselves on import; SUITES' `modules` names
those modules, imported on the registry's first read (mtrl/registry.py), so this
module imports none of them.

File-backed code data sets (HumanEval, MBPP, CoopHumanEval JSONL) share
`DatasetSuite`; the built-in integer-function family is `mtrl.data.synthetic.suite`.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Callable, Protocol, runtime_checkable

from mtrl.config.fields import check_choice, check_int
from mtrl.data.datasets import DATASETS, load_code_tasks
from mtrl.envs.code.prompts import PromptTemplates
from mtrl.envs.code.task import CodeTask
from mtrl.registry import Registry
from mtrl.data.task_filter import keep_tasks, read_task_ids

SPLITS = ("train", "validation", "test")


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """The `data` section.

    name: a registered suite (SUITES). path: its file or folder ("" where none).
    train_split / eval_split / test_split: the suite's split specs for train,
      validation and test ("" test_split: no test split); file suites take
      "split" or "split[start:end]" (TFDS-style slices).
    num_train / num_eval / num_test: tasks per split (file suites: at most that
      many validation/test tasks; generated suites: exactly).
    options: the suite's own options (e.g. the family's FamilyConfig fields).
    """

    name: str = "intfn"
    path: str = ""
    train_split: str = "train"
    eval_split: str = "heldout"
    test_split: str = ""
    num_train: int = 2000
    num_eval: int = 100
    num_test: int = 100
    options: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        check_choice("name", self.name, suite_names())
        for field in ("path", "train_split", "eval_split", "test_split"):
            if not isinstance(getattr(self, field), str):
                raise ValueError(f"{field} must be a string, got {getattr(self, field)!r}")
        for field in ("num_train", "num_eval", "num_test"):
            check_int(field, getattr(self, field), 1)
        if not isinstance(self.options, dict):
            raise ValueError(f"options must be a dict, got {self.options!r}")

    def split_spec(self, split: str) -> str:
        return {"train": self.train_split, "validation": self.eval_split,
                "test": self.test_split}[check_split(split)]


def check_split(split: str) -> str:
    check_choice("split", split, SPLITS)
    return split


class TaskSuite(Protocol):
    task_type: type  # the type of its tasks (CodeTask, MathTask, GameTask, ...)

    def tasks(self, split: str) -> list: ...

    def templates(self, name: str) -> PromptTemplates: ...

    def check_sft(self, sft, num_agents: int) -> None: ...

    def demonstrations(self, env, num_agents: int, sft) -> list[list[tuple]]: ...


@runtime_checkable
class ExtraTestSplits(Protocol):
    """An optional capability: a suite that reports more test splits beside "test"
    (e.g. an out-of-distribution one), evaluated with it after SFT and once for the
    chosen checkpoint, never used to choose. Keys name the metrics' prefix
    ("<name>_success"); they are identifiers ending in "test", other than "test"."""

    def extra_test_splits(self) -> dict[str, list]: ...


def extra_test_splits(suite: TaskSuite) -> dict[str, list]:
    """The suite's extra test splits ({} for a suite without the capability), names
    checked: one-line error naming the split."""
    if not isinstance(suite, ExtraTestSplits):
        return {}
    splits = suite.extra_test_splits()
    for name in splits:
        if not (name.isidentifier() and name.endswith("test") and name != "test"):
            raise ValueError(f"config.data: extra test split {name!r} must be an identifier "
                             "ending in 'test', other than 'test'")
    return splits


# Modules whose import registers a suite (the family is generated, GSM8K reads JSONL,
# TextWorld plays its engine); the file-backed code suites are registered below.
SUITES: Registry[Callable[[DataConfig, int], TaskSuite]] = Registry("task suite", modules=(
    "mtrl.data.synthetic.suite",
    "mtrl.data.gsm8k_suite",
    "mtrl.data.textworld_suite",
    "mtrl.data.calc_suite",
    "mtrl.data.openenv_suite",
    "mtrl.data.arith_suite",
    "mtrl.data.guess_suite",
))


def default_templates(name: str, own: dict[str, PromptTemplates] | None = None
                      ) -> PromptTemplates:
    """"default" (the code environment's), or one of the suite's own named templates."""
    own = own or {}
    if name == "default":
        return PromptTemplates()
    check_choice("templates", name, ("default", *sorted(own)))
    return own[name]


def parse_split(spec: str) -> tuple[str, slice]:
    """"test" -> ("test", [:]); "test[:124]" -> ("test", [:124])."""
    match = re.fullmatch(r"(\w+)(?:\[(-?\d*):(-?\d*)\])?", spec)
    if not match:
        raise ValueError(f"expected 'split' or 'split[start:end]', got {spec!r}")
    name, start, end = match.groups()
    return name, slice(int(start) if start else None, int(end) if end else None)


class DatasetSuite:
    """A code data set from DATASETS: slices of its own splits, the environment's
    default templates, canonical solutions as one agent's demonstrations."""

    task_type = CodeTask

    def __init__(self, data: DataConfig, seed: int):
        del seed  # file suites are fixed lists
        self.data = data
        self._cache: dict[str, list] = {}

    def tasks(self, split: str) -> list:
        if split not in self._cache:
            spec = self.data.split_spec(split)
            if not spec:
                return []
            name, part = parse_split(spec)
            options = dict(self.data.options)
            ids_file = options.pop("train_ids_file", "")  # data/task_filter.py
            tasks = load_code_tasks(self.data.name, self.data.path or None, name,
                                    **options)[part]
            if ids_file and split == "train":
                tasks = keep_tasks(tasks, read_task_ids(ids_file))
            cap = {"train": None, "validation": self.data.num_eval,
                   "test": self.data.num_test}[split]
            self._cache[split] = tasks[:cap]
        return self._cache[split]

    def templates(self, name: str) -> PromptTemplates:
        return default_templates(name)

    def check_sft(self, sft, num_agents: int) -> None:
        if sft.enabled and num_agents != 1:
            raise ValueError(f"config.sft: suite {self.data.name!r} has demonstrations for "
                             "one agent only; disable SFT or use env.num_agents=1")
        if sft.first_guess:
            raise ValueError(f"config.sft.first_guess: suite {self.data.name!r} has no first "
                             "guess (it is the integer-function family's)")

    def demonstrations(self, env, num_agents: int, sft) -> list[list[tuple]]:
        self.check_sft(sft, num_agents)
        pairs = []
        for task in self.tasks("train"):
            if task.canonical_solution:
                _, prompts = env.reset(task)
                pairs.append((prompts[0], f"```python\n{task.canonical_solution.strip()}\n```"))
        if not pairs:
            raise ValueError(f"config.sft: suite {self.data.name!r} has no canonical solutions")
        return [pairs]


for _name in ("humaneval", "mbpp", "mbpp_sanitized", "coop_humaneval"):
    assert _name in DATASETS
    SUITES.register(_name)(DatasetSuite)


def suite_names() -> tuple[str, ...]:
    return SUITES.names()


def build_suite(data: DataConfig, seed: int) -> TaskSuite:
    return SUITES.get(data.name)(data, seed)
