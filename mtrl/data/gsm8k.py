"""GSM8K grade-school math word problems, read from local JSONL files.

GSM8K: Cobbe et al. 2021, "Training Verifiers to Solve Math Word Problems".
Each line holds `question` and `answer`; the answer is a worked solution whose last
line is `#### <final number>`. Not a code task, so it has its own record type.
"""

from __future__ import annotations

import os
import re

from mtrl.config.fields import check_choice
from mtrl.data.files import PathLike, read_jsonl, require_fields, resolve_in_folder
from mtrl.envs.math.task import MathTask

GSM8K_SPLITS: tuple[str, ...] = ("train", "test")
ANSWER_MARKER = "#### "
_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def parse_gsm8k_answer(answer: str) -> tuple[str, str]:
    """Splits a GSM8K answer into (worked solution, final number without commas).

    Example: "3 + 4 = <<3+4=7>>7\\n#### 1,080" -> ("3 + 4 = <<3+4=7>>7", "1080").
    Raises ValueError when the `#### ` marker or a number after it is missing.
    """
    if ANSWER_MARKER not in answer:
        raise ValueError(f"GSM8K answer has no {ANSWER_MARKER!r} line: {answer[-80:]!r}")
    solution, final = answer.rsplit(ANSWER_MARKER, 1)
    number = final.strip().replace(",", "")
    if not _NUMBER.fullmatch(number):
        raise ValueError(f"GSM8K final answer is not a number: {final.strip()!r}")
    return solution.rstrip(), number


def load_gsm8k(path: PathLike, split: str = "test") -> list[MathTask]:
    """GSM8K problems of one split, in file order.

    path: the folder holding train.jsonl / test.jsonl, or the split's file itself.
    """
    check_choice("split", split, GSM8K_SPLITS)
    what = f"GSM8K's {split}.jsonl (fields question, answer), or a folder holding it"
    file = resolve_in_folder(path, f"{split}.jsonl", what)
    tasks = []
    for index, record in enumerate(read_jsonl(file, what)):
        where = f"{os.fspath(file)} record {index}"
        require_fields(record, ("question", "answer"), where)
        try:
            solution, number = parse_gsm8k_answer(record["answer"])
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
        tasks.append(MathTask(task_id=f"gsm8k/{split}/{index}", question=record["question"],
                              answer=number, solution=solution))
    return tasks
