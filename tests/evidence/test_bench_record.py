"""mtrl/evidence/bench_record.py: one record format, a benchmark's own keys beside one
reserved "stamp"; written again, the stamp's load_after is read again; records made
before stamps still read."""

import json

import pytest

from mtrl.evidence import bench_record
from mtrl.evidence.bench_record import FORMAT, read_record, write_record
from mtrl.evidence.stamp import machine_stamp

CODE = {"commit": "c" * 40, "dirty": False, "diff_sha256": None}


def test_the_record_is_the_results_and_the_finished_stamp(tmp_path):
    stamp = machine_stamp(code=CODE)
    path = tmp_path / "deep" / "r.json"  # the folder is made
    record = write_record(path, {"arms": {"a": 1.5}, "command": "python -m bench.x"}, stamp)
    assert json.loads(path.read_text()) == record
    assert record["arms"] == {"a": 1.5} and record["command"] == "python -m bench.x"
    assert record["stamp"]["format"] == FORMAT and record["stamp"]["commit"] == "c" * 40
    assert record["stamp"]["load_before"] == stamp["load_before"]
    results, got = read_record(path)
    assert results == {"arms": {"a": 1.5}, "command": "python -m bench.x"}
    assert got == record["stamp"]


def test_each_write_reads_the_load_again(tmp_path, monkeypatch):
    stamp = machine_stamp(code=CODE)
    loads = iter([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    monkeypatch.setattr("mtrl.evidence.stamp.load_average", lambda: next(loads))
    first = write_record(tmp_path / "r.json", {"part": 1}, stamp)
    second = write_record(tmp_path / "r.json", {"part": 2}, stamp)
    assert first["stamp"]["load_after"] == [1.0, 1.0, 1.0]
    assert second["stamp"]["load_after"] == [2.0, 2.0, 2.0]
    assert read_record(tmp_path / "r.json")[0] == {"part": 2}


def test_the_stamp_key_is_reserved_and_a_stamp_is_required():
    with pytest.raises(ValueError, match="reserved key 'stamp'"):
        bench_record.bench_record({"stamp": 1}, machine_stamp(code=CODE))
    with pytest.raises(ValueError, match="not a machine stamp"):
        bench_record.bench_record({"x": 1}, {})


def test_an_older_record_reads_without_a_stamp(tmp_path):
    (tmp_path / "old.json").write_text(json.dumps({"ms": {"1": 2.0}, "load_before": [1, 1, 1]}))
    results, stamp = read_record(tmp_path / "old.json")
    assert stamp is None and results == {"ms": {"1": 2.0}, "load_before": [1, 1, 1]}
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(ValueError, match="a JSON object, got list"):
        read_record(tmp_path / "list.json")
