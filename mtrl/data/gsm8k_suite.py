"""GSM8K as a task suite (mtrl.data.suite): disjoint slices of the shared files.

GSM8K (Cobbe et al. 2021) ships train (7,473) and test (1,319) problems. The suite's
splits are TFDS-style slices of those files (`data.train_split="train[500:]"`,
`eval_split="train[:500]"`, `test_split="test"`); two specs that slice the same file
must not overlap (checked when the tasks are first read), so validation never holds
a training problem and test is GSM8K's own test set.

Options (`data.options`): `max_question_chars` (0: all) keeps the problems whose
question is at most that long, for small byte-level models whose context cannot
hold the longest questions; it filters inside each slice, so disjointness holds.
`train_ids_file` keeps only the train problems a learnable-band file names
(mtrl/data/task_filter.py, written by tools/select_learnable_tasks.py).

Each split is capped at `data.num_train` / `num_eval` / `num_test` problems (file
order). SFT demonstrations: the worked solution (calculator annotations `<<...>>`
removed) ending in `\\boxed{answer}`, the form both the math and the tool
environment accept as a final answer.
"""

from __future__ import annotations

import re

from mtrl.config.fields import check_choice, check_int
from mtrl.data.gsm8k import GSM8K_SPLITS, MathTask, load_gsm8k
from mtrl.data.suite import SUITES, DataConfig, check_split, parse_split
from mtrl.data.suite_options import check_known_options
from mtrl.data.task_filter import keep_tasks, read_task_ids

_CALC = re.compile(r"<<[^>]*>>")
_OPTIONS = ("max_question_chars", "train_ids_file")


def demonstration(task: MathTask) -> str:
    """The worked solution as a completion ending in \\boxed{answer}."""
    solution = _CALC.sub("", task.solution).strip()
    return f"{solution}\nThe answer is \\boxed{{{task.answer}}}."


class GSM8KSuite:
    task_type = MathTask

    def __init__(self, data: DataConfig, seed: int):
        del seed  # fixed files, fixed slices
        check_known_options("gsm8k", data.options, _OPTIONS)
        self.max_chars = data.options.get("max_question_chars", 0)
        check_int("config.data.options.max_question_chars", self.max_chars, 0)
        if not data.path:
            raise ValueError("config.data.path: gsm8k needs the folder holding "
                             "train.jsonl and test.jsonl")
        self.ids_file = data.options.get("train_ids_file", "")
        self.data = data
        self._files: dict[str, list[MathTask]] = {}
        self._cache: dict[str, list[MathTask]] = {}

    def _file(self, name: str) -> list[MathTask]:
        if name not in GSM8K_SPLITS:
            raise ValueError(f"config.data: gsm8k's files are {GSM8K_SPLITS}, got {name!r}")
        if name not in self._files:
            self._files[name] = load_gsm8k(self.data.path, name)
        return self._files[name]

    def _slice(self, split: str) -> tuple[str, range]:
        spec = self.data.split_spec(split)
        try:
            name, part = parse_split(spec)
        except ValueError as e:
            raise ValueError(f"config.data: {split} split: {e}") from None
        return name, range(*part.indices(len(self._file(name))))

    def check_disjoint(self) -> None:
        """Slices of one file for different splits must not overlap."""
        used = {}
        for split in ("train", "validation", "test"):
            if not self.data.split_spec(split):
                continue
            name, rows = self._slice(split)
            for other, (other_name, other_rows) in used.items():
                if name == other_name and set(rows) & set(other_rows):
                    raise ValueError(f"config.data: the {split} and {other} splits overlap "
                                     f"in gsm8k's {name!r} file")
            used[split] = (name, rows)

    def tasks(self, split: str) -> list[MathTask]:
        check_split(split)
        if not self.data.split_spec(split):
            return []
        if split not in self._cache:
            self.check_disjoint()
            name, rows = self._slice(split)
            tasks = [self._file(name)[i] for i in rows]
            if self.max_chars:
                tasks = [t for t in tasks if len(t.question) <= self.max_chars]
            if self.ids_file and split == "train":
                tasks = keep_tasks(tasks, read_task_ids(self.ids_file))
            cap = {"train": self.data.num_train, "validation": self.data.num_eval,
                   "test": self.data.num_test}[split]
            self._cache[split] = tasks[:cap]
        return self._cache[split]

    def templates(self, name: str):
        from mtrl.envs.math.prompts import MathTemplates
        check_choice("templates", name, ("default",))
        return MathTemplates()

    def check_sft(self, sft, num_agents: int) -> None:
        if sft.first_guess:
            raise ValueError("config.sft.first_guess: gsm8k has no first guess (it is the "
                             "integer-function family's)")

    def demonstrations(self, env, num_agents: int, sft) -> list[list[tuple]]:
        """[agent] -> (first prompt, worked solution): every agent learns the same
        solutions from its own prompt."""
        self.check_sft(sft, num_agents)
        pairs = [[] for _ in range(num_agents)]
        for task in self.tasks("train"):
            _, prompts = env.reset(task)
            for a in range(num_agents):
                pairs[a].append((prompts[a], demonstration(task)))
        return pairs


SUITES.register("gsm8k")(GSM8KSuite)
