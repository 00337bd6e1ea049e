"""Task data sets: HumanEval, MBPP (full and sanitized), CoopHumanEval-style JSONL and
GSM8K, as plain Python lists of records and as TFDS array_record builders.

Plain loaders (no TFDS import):
    load_humaneval(path=None, split="test") -> list[CodeTask]
    load_mbpp(path, variant="full", split="all", *, show_first_test=True,
              include_challenge_tests=False) -> list[CodeTask]
    load_coop_humaneval(path, split="test") -> list[CodeTask]
    load_gsm8k(path, split="test") -> list[MathTask]
    DATASETS: name -> loader(path, split, **options); load_code_tasks(name, ...)

The embedded default family (generated, no files): mtrl.data.synthetic, registered
as DATASETS "intfn" (splits "train" / "heldout").

TFDS (imported on first use, as it costs ~0.5 s; importing it also registers the
builders mtrl_humaneval, mtrl_mbpp/{full,sanitized}, mtrl_coop_humaneval by name):
    prepare_tfds(name, data_dir, *, source_path=None, config=None) -> DatasetBuilder
    read_tfds_tasks(builder, split) -> list[CodeTask]
    load_tfds_tasks(name, split, data_dir, *, source_path=None, config=None)
"""

from __future__ import annotations

import importlib
from typing import Any

from mtrl.data.check_split import CheckSplit, split_check_function
from mtrl.data.datasets import DATASETS, load_code_tasks
from mtrl.data.gsm8k import MathTask, load_gsm8k, parse_gsm8k_answer
from mtrl.data.humaneval import (humaneval_dropped_tests, humaneval_record_to_task,
                                 load_coop_humaneval, load_humaneval)
from mtrl.data.mbpp import (MBPP_SPLIT_RANGES, MBPP_SPLITS, MBPP_VARIANTS, load_mbpp,
                            mbpp_entry_point, mbpp_split_of)

_TFDS_EXPORTS = ("MbppConfig", "MtrlCoopHumaneval", "MtrlHumaneval", "MtrlMbpp",
                 "TFDS_BUILDERS", "code_task_features", "example_to_task",
                 "load_tfds_tasks", "prepare_tfds", "read_tfds_tasks", "task_to_example")

__all__ = [
    "CheckSplit", "DATASETS", "MBPP_SPLITS", "MBPP_SPLIT_RANGES", "MBPP_VARIANTS",
    "MathTask", "humaneval_dropped_tests", "humaneval_record_to_task",
    "load_code_tasks", "load_coop_humaneval", "load_gsm8k", "load_humaneval",
    "load_mbpp", "mbpp_entry_point", "mbpp_split_of", "parse_gsm8k_answer",
    "split_check_function", *_TFDS_EXPORTS,
]


def __getattr__(name: str) -> Any:
    # TFDS names load lazily so that environments reading tasks from files do not
    # pay for importing tensorflow_datasets.
    if name in _TFDS_EXPORTS:
        return getattr(importlib.import_module("mtrl.data.tfds_builders"), name)
    raise AttributeError(f"module 'mtrl.data' has no attribute {name!r}")
