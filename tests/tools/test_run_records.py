"""tools/run_records.py: a run's provenance (commit, dirty flag and diff digest of
its checkout, config hash, warm start and its checkpoint digest) read from real files
in a real git repository."""

import hashlib
import json
import subprocess

from tools.run_records import checkout_state, run_record


def make_run(path, init_from="", manifest=b"abc  model.safetensors\n"):
    (path / "checkpoints" / "4" / "state").mkdir(parents=True)
    (path / "checkpoints" / "4" / "state" / "checksums.sha256").write_bytes(manifest)
    (path / "config.json").write_text(json.dumps({"seed": 2,
                                                  "train": {"init_from": init_from}}))
    return path


def test_run_record_names_config_hash_and_warm_start_digest(tmp_path):
    warm = make_run(tmp_path / "warm", manifest=b"w  state\n")
    run = make_run(tmp_path / "run", init_from=str(warm))
    (run / "summary.json").write_text(json.dumps({"test_success": 0.25, "best_step": 4}))
    record = run_record(run)
    assert record["seed"] == 2 and record["test_success"] == 0.25
    assert record["config_sha256"] == hashlib.sha256(
        (run / "config.json").read_bytes()).hexdigest()
    assert record["warm_start"] == str(warm)
    assert record["warm_start_manifest_sha256"] == hashlib.sha256(b"w  state\n").hexdigest()
    assert run_record(warm)["warm_start"] is None  # an SFT run names no warm start
    # A run that loaded Hugging Face weights names them and their digest.
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "model.safetensors").write_bytes(b"weights")
    config = json.loads((run / "config.json").read_text())
    config["model"] = {"hf_checkpoint": str(tmp_path / "hf")}
    (run / "config.json").write_text(json.dumps(config))
    assert run_record(run)["hf_checkpoint_weights_sha256"] == hashlib.sha256(
        b"weights").hexdigest()


def test_checkout_state_reads_commit_and_dirty_diff(tmp_path):
    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), *args], check=True,
                              capture_output=True, text=True).stdout.strip()
    git("init", "-q")
    (tmp_path / "f.txt").write_text("one\n")
    git("add", "f.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    clean = checkout_state(tmp_path)
    assert clean == {"commit": git("rev-parse", "HEAD"), "dirty": False, "diff_sha256": None}
    (tmp_path / "f.txt").write_text("two\n")
    dirty = checkout_state(tmp_path)
    assert dirty["dirty"] and dirty["commit"] == clean["commit"] and len(dirty["diff_sha256"]) == 64
