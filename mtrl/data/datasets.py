"""The code data sets by name (docs/design.md section 6, rule 10).

Every entry is a loader with one calling convention, so a config can name a data set
and hand over a path and a split:

    tasks = DATASETS.get(name)(path, split, **options)   # -> list[CodeTask]

path: local file or folder (None only where the data ships with a package:
HumanEval). split: the data set's own split names (see each loader). options: the
loader's keyword flags (e.g. MBPP's show_first_test).
"""

from __future__ import annotations

from typing import Any, Protocol

from mtrl.data.files import PathLike
from mtrl.data.humaneval import load_coop_humaneval, load_humaneval
from mtrl.data.mbpp import load_mbpp
from mtrl.envs.code.task import CodeTask
from mtrl.registry import Registry


class CodeTaskLoader(Protocol):
    def __call__(self, path: PathLike | None = None, split: str = ...,
                 **options: Any) -> list[CodeTask]: ...


DATASETS: Registry[CodeTaskLoader] = Registry("code dataset")


@DATASETS.register("humaneval")
def _humaneval(path: PathLike | None = None, split: str = "test") -> list[CodeTask]:
    return load_humaneval(path, split)


@DATASETS.register("mbpp")
def _mbpp(path: PathLike | None = None, split: str = "all", **options: Any) -> list[CodeTask]:
    return load_mbpp(path, "full", split, **options)


@DATASETS.register("mbpp_sanitized")
def _mbpp_sanitized(path: PathLike | None = None, split: str = "all",
                    **options: Any) -> list[CodeTask]:
    return load_mbpp(path, "sanitized", split, **options)


@DATASETS.register("coop_humaneval")
def _coop_humaneval(path: PathLike | None = None, split: str = "test") -> list[CodeTask]:
    return load_coop_humaneval(path, split)


def load_code_tasks(name: str, path: PathLike | None = None, split: str | None = None,
                    **options: Any) -> list[CodeTask]:
    """Looks `name` up in DATASETS and loads it; split None takes the loader's default."""
    loader = DATASETS.get(name)
    if split is None:
        return loader(path, **options)
    return loader(path, split, **options)


@DATASETS.register("intfn")
def _intfn(path: PathLike | None = None, split: str = "train", **options: Any) -> list[CodeTask]:
    # The embedded default family (generated, no file); imported lazily.
    from mtrl.data.synthetic import load_intfn_tasks
    return load_intfn_tasks(path, split, **options)
