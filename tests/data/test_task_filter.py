"""The learnable-band task filter's file and selection (mtrl/data/task_filter.py)."""

import dataclasses
import json

import pytest

from mtrl.data.task_filter import (earlier_pass_rates, keep_tasks, learnable_band, read_task_ids,
                                   write_task_ids)


@dataclasses.dataclass
class Task:
    task_id: str


def test_band_keeps_rates_strictly_between_zero_and_one():
    rates = {"a": 0.0, "b": 0.25, "c": 1.0, "d": 0.75}
    assert learnable_band(rates) == ["b", "d"]
    assert learnable_band(rates, low=0.5) == ["d"]
    with pytest.raises(ValueError, match="low < high"):
        learnable_band(rates, low=0.6, high=0.4)


def test_file_round_trip_and_filtering(tmp_path):
    path = tmp_path / "ids.json"
    kept = write_task_ids(path, {"t/1": 0.5, "t/2": 0.0, "t/3": 1.0}, samples=4, model="m")
    assert kept == ["t/1"] and read_task_ids(path) == ["t/1"]
    tasks = [Task("t/1"), Task("t/2"), Task("t/3")]
    assert keep_tasks(tasks, read_task_ids(path)) == [Task("t/1")]
    with pytest.raises(ValueError, match="ids not in the train split"):
        keep_tasks(tasks, ["t/9"])


def test_missing_empty_or_malformed_files_are_one_line_errors(tmp_path):
    with pytest.raises(ValueError, match="train_ids_file: .* does not exist"):
        read_task_ids(tmp_path / "none.json")
    write_task_ids(tmp_path / "empty.json", {"a": 0.0}, samples=2)
    with pytest.raises(ValueError, match="keeps no tasks"):
        read_task_ids(tmp_path / "empty.json")
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a task-id file"):
        read_task_ids(tmp_path / "bad.json")


def test_extending_a_file_keeps_its_rates_and_checks_the_sample_count(tmp_path):
    path = tmp_path / "band.json"
    assert earlier_pass_rates(path, 4) == {}  # nothing to extend yet
    write_task_ids(path, {"a": 0.25, "b": 0.0}, samples=4)
    rates = earlier_pass_rates(path, 4)
    assert rates == {"a": 0.25, "b": 0.0}
    rates.update({"c": 0.5, "d": 1.0})
    assert write_task_ids(path, rates, samples=4) == ["a", "c"]
    with pytest.raises(ValueError, match="from 4 samples per task, not 8"):
        earlier_pass_rates(path, 8)


def test_reward_band_keeps_tasks_whose_sampled_rewards_differ(tmp_path):
    path = tmp_path / "band.json"
    spreads = {"a": 0.0, "b": 0.3, "c": 1.3}
    # b never passed (rate 0) but its shaped rewards differ: kept; a's are all equal.
    kept = write_task_ids(path, {"a": 0.0, "b": 0.0, "c": 0.25}, samples=4,
                          reward_spreads=spreads)
    assert kept == ["b", "c"] == read_task_ids(path)
    record = json.loads(path.read_text())
    assert record["band"] == "reward" and record["reward_spreads"] == spreads
    with pytest.raises(ValueError, match="is a reward band"):
        earlier_pass_rates(path, 4)
