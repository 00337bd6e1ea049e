"""TFDS builders: prepared from local files into array_record, read back without
TensorFlow, equal to the plain loaders task for task."""

import json
import sys

import pytest
import tensorflow_datasets as tfds

from mtrl.data import (MBPP_SPLIT_RANGES, MbppConfig, code_task_features, example_to_task,
                       load_coop_humaneval, load_mbpp, load_tfds_tasks,
                       prepare_tfds, read_tfds_tasks, task_to_example)
from mtrl.envs.code.task import CodeTask


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    tfds.display_progress_bar(False)
    return tmp_path_factory.mktemp("tfds")


@pytest.mark.parametrize("name, tasks_fixture", [("mbpp", "mbpp_full_tasks"),
                                                  ("mbpp_sanitized", "mbpp_sanitized_tasks")])
def test_mbpp_round_trip_every_split(request, mbpp_dir, data_dir, name, tasks_fixture):
    all_tasks = request.getfixturevalue(tasks_fixture)
    builder = prepare_tfds(name, data_dir, source_path=mbpp_dir)
    assert builder.info.file_format.value == "array_record"
    assert sorted(builder.info.splits) == sorted(MBPP_SPLIT_RANGES)
    for split, (low, high) in MBPP_SPLIT_RANGES.items():
        expected = [t for t in all_tasks if low <= int(t.task_id.split("/")[1]) <= high]
        assert read_tfds_tasks(builder, split) == expected
    files = sorted(p.name for p in builder.data_path.iterdir())
    assert "mtrl_mbpp-train.array_record-00000-of-00001" in files


def test_humaneval_round_trip(data_dir, humaneval_tasks):
    tasks = load_tfds_tasks("humaneval", "test", data_dir)
    assert tasks == humaneval_tasks
    assert tasks[32].tests == () and tasks[32].test_code.startswith("\n\nMETADATA")


def test_coop_round_trip_and_missing_source(tmp_path, data_dir):
    record = {"task_id": "Coop/0", "prompt": "def one():\n", "canonical_solution": "    return 1\n",
              "test": "def check(candidate):\n    assert candidate() == 1\n", "entry_point": "one"}
    path = tmp_path / "coop.jsonl"
    path.write_text(json.dumps(record) + "\n")
    coop_dir = tmp_path / "tfds"
    assert load_tfds_tasks("coop_humaneval", "test", coop_dir, source_path=path) == \
        load_coop_humaneval(path)
    with pytest.raises(ValueError, match="needs source_path"):
        prepare_tfds("coop_humaneval", tmp_path / "elsewhere")


def test_tfds_data_source_by_registered_name(shared_data, data_dir):
    import mtrl.data.tfds_builders  # noqa: F401  (registers the mtrl_* names)

    source = tfds.data_source("mtrl_mbpp/sanitized", split="validation", data_dir=data_dir,
                              builder_kwargs={"source_path": shared_data / "mbpp"})
    expected = load_mbpp(shared_data / "mbpp", "sanitized", "validation")
    assert len(source) == len(expected) == 43
    assert example_to_task(source[5]) == expected[5]  # order is the loader's order


def test_custom_mbpp_config(shared_data, data_dir):
    config = MbppConfig(name="full_no_example", variant="full", show_first_test=False,
                        include_challenge_tests=True)
    tasks = load_tfds_tasks("mbpp", "prompt", data_dir, source_path=shared_data / "mbpp",
                            config=config)
    assert tasks == load_mbpp(shared_data / "mbpp", "full", "prompt", show_first_test=False,
                              include_challenge_tests=True)
    with pytest.raises(ValueError, match="variant='full'"):
        MbppConfig(name="x", variant="sanitized", include_challenge_tests=True)
    with pytest.raises(ValueError, match="has no builder configs"):
        prepare_tfds("humaneval", data_dir, config="full")


def test_none_and_empty_optional_fields_survive_serialization():
    features = code_task_features()
    for task in (CodeTask("a/1", "p", "f", ("assert f()",)),
                 CodeTask("a/2", "p", "f", (), canonical_solution="", test_code="check"),
                 CodeTask("a/3", "é\n", "f", ("assert f('ü')",) * 2, setup="import os")):
        serialized = features.serialize_example(task_to_example(task))
        assert example_to_task(features.deserialize_example_np(serialized)) == task
    with pytest.raises(ValueError, match="lacks CodeTask features"):
        example_to_task({"task_id": b"x"})


def test_sliced_split_and_unknown_split(data_dir, humaneval_tasks):
    builder = prepare_tfds("humaneval", data_dir)
    assert read_tfds_tasks(builder, "test[10:13]") == humaneval_tasks[10:13]
    with pytest.raises(ValueError, match="has splits \\['test'\\]"):
        read_tfds_tasks(builder, "train")


def test_no_tensorflow_was_imported():
    # Runs after the builders above prepared and read data in this process.
    assert "tensorflow" not in sys.modules
