"""mtrl/evidence/stamp.py: the one machine stamp (code state, host, CPUs and threads, load
before and after) that every benchmark record carries."""

import os

import pytest

from mtrl.evidence.stamp import STAMP_KEYS, finished, load_average, machine_stamp, usable_cpus
from mtrl.training.run.provenance import code_state


def test_the_stamp_names_the_code_the_machine_and_the_load():
    stamp = machine_stamp()
    assert set(stamp) == set(STAMP_KEYS)
    code = code_state()
    assert {k: stamp[k] for k in ("commit", "dirty", "diff_sha256")} == code
    assert stamp["cpus"] == os.cpu_count() and 1 <= stamp["threads"] <= stamp["cpus"]
    assert stamp["threads"] == usable_cpus()
    assert len(stamp["load_before"]) == 3 and all(x >= 0 for x in stamp["load_before"])
    assert stamp["host"] and stamp["python"].count(".") == 2


def test_omp_threads_and_a_given_code_state_are_recorded(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    stamp = machine_stamp(code={"commit": "a" * 40, "dirty": True, "diff_sha256": "d"})
    assert stamp["omp_num_threads"] == "1"
    assert (stamp["commit"], stamp["dirty"], stamp["diff_sha256"]) == ("a" * 40, True, "d")


def test_finished_adds_the_load_after_and_leaves_the_stamp_as_it_was():
    stamp = machine_stamp(code={})
    done = finished(stamp)
    assert "load_after" not in stamp and len(done["load_after"]) == 3
    assert {k: done[k] for k in stamp} == stamp
    assert len(load_average()) == 3


def test_finished_refuses_what_is_not_a_stamp():
    with pytest.raises(ValueError, match=r"not a machine stamp: missing \['commit'"):
        finished({"load_before": [0.0, 0.0, 0.0]})
