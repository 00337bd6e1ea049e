"""Provenance: the code state of a real git checkout (clean, dirty, records-only
changes, untracked code), the config hash (only fields that shape the experiment), the
parameters' digest, and the comparison reuse relies on."""

import subprocess

import jax.numpy as jnp
import pytest

from mtrl.training.run.provenance import (code_state, config_hash, params_digest,
                                          run_provenance, same_origin)


def git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "mtrl").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "mtrl" / "a.py").write_text("x = 1\n")
    (tmp_path / "docs" / "r.json").write_text("{}\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "-c", "user.email=a@b", "-c", "user.name=a", "add", "-A")
    git(tmp_path, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "c")
    return tmp_path


def test_code_state_of_a_clean_and_a_dirty_checkout(repo):
    clean = code_state(repo)
    assert len(clean["commit"]) == 40 and clean["dirty"] is False
    assert clean["diff_sha256"] is None
    (repo / "docs" / "r.json").write_text('{"a": 1}\n')  # a record, not code
    assert code_state(repo) == clean
    (repo / "mtrl" / "a.py").write_text("x = 2\n")
    dirty = code_state(repo)
    assert dirty["dirty"] is True and dirty["commit"] == clean["commit"]
    assert code_state(repo) == dirty  # the same change, the same digest
    (repo / "mtrl" / "a.py").write_text("x = 3\n")
    assert code_state(repo)["diff_sha256"] != dirty["diff_sha256"]
    (repo / "mtrl" / "a.py").write_text("x = 1\n")
    (repo / "mtrl" / "new.py").write_text("y = 1\n")  # untracked code counts
    untracked = code_state(repo)
    assert untracked["dirty"] is True
    (repo / "mtrl" / "new.py").write_text("y = 2\n")
    assert code_state(repo)["diff_sha256"] != untracked["diff_sha256"]


def test_code_state_outside_git(tmp_path):
    assert code_state(tmp_path) == {"commit": None, "dirty": None, "diff_sha256": None}


def test_config_hash_ignores_how_long_and_how_often_only():
    record = {"seed": 0, "train": {"steps": 200, "eval_interval": 10, "init_from": "",
                                   "tasks_per_step": 3}, "optim": {"learning_rate": 2e-4}}
    base = config_hash(record)
    assert len(base) == 64
    longer = {**record, "train": {**record["train"], "steps": 400, "init_from": "/w"}}
    assert config_hash(longer) == base
    for changed in ({**record, "seed": 1},
                    {**record, "optim": {"learning_rate": 1e-4}},
                    {**record, "train": {**record["train"], "tasks_per_step": 4}}):
        assert config_hash(changed) != base


def test_params_digest_sees_every_value_and_the_agent_order():
    a = {"w": jnp.arange(6.0).reshape(2, 3), "b": jnp.zeros(3)}
    b = {"w": jnp.arange(6.0).reshape(2, 3), "b": jnp.zeros(3).at[1].set(1e-7)}
    assert params_digest([a, a]) == params_digest([dict(a), dict(a)])
    assert params_digest([a, a]) != params_digest([a, b])
    assert params_digest([a, b]) != params_digest([b, a])
    assert params_digest([a]) != params_digest([{**a, "w": a["w"].astype(jnp.bfloat16)}])


def test_same_origin_names_the_first_difference(repo):
    record = {"seed": 0}
    now = run_provenance(record, {"digest": "d"}, None, code=code_state(repo))
    assert now["mixed_code"] is False and now["warm_start"] == {"digest": "d"}
    assert same_origin(now, now) is None
    assert "no provenance" in same_origin(None, now)
    other_config = run_provenance({"seed": 1}, None, None, code=code_state(repo))
    assert "config hash" in same_origin(other_config, now)
    (repo / "mtrl" / "a.py").write_text("x = 5\n")
    changed = run_provenance(record, None, None, code=code_state(repo))
    assert "dirty flag" in same_origin(now, changed)
    mixed = run_provenance(record, None, now["code"], code=changed["code"])
    assert mixed["mixed_code"] is True and "more than one code state" in same_origin(mixed, now)


def test_records_under_experiments_and_bench_are_not_code(repo):
    """A claim run writes its record into experiments/claims/records/; that must leave
    the next claim's warm starts reusable (the code state unchanged), while a program
    under experiments/ or bench/ is code."""
    for rel in ("experiments/claims/records/c.json", "experiments/study/README.md",
                "bench/records/update/u.json", "experiments/claims/c.py", "bench/b.py"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("0\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "d")
    clean = code_state(repo)
    for rel in ("experiments/claims/records/c.json", "experiments/study/README.md",
                "bench/records/update/u.json", "experiments/claims/records/new.json"):
        (repo / rel).write_text("1\n")
    assert code_state(repo) == clean
    for rel in ("experiments/claims/c.py", "bench/b.py"):
        (repo / rel).write_text("1\n")
        assert code_state(repo)["dirty"] is True
        (repo / rel).write_text("0\n")
