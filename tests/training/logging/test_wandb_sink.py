"""Weights & Biases logging, with the real wandb library in offline mode: the rows
it writes to its run file are read back (wandb_records.py)."""

import math
import pathlib

import pytest

from mtrl.training.logging import wandb_sink
from mtrl.training.logging.metrics import MetricsLogger
from mtrl.training.logging.wandb_sink import WandbSink, check_wandb_installed
from tests.training.wandb_records import config_keys, history_rows

pytest.importorskip("wandb")  # in the [test] extra: CI runs this file


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb_config"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb_cache"))


def run_files(workdir: pathlib.Path) -> list[pathlib.Path]:
    return sorted(workdir.glob("wandb/offline-run-*/run-*.wandb"))


def test_rl_test_and_sft_rows_reach_wandb_on_their_own_axes(tmp_path):
    sink = WandbSink(tmp_path, "mtrl-test", {"seed": 3, "train": {"steps": 2}})
    with MetricsLogger(tmp_path, tensorboard=False, wandb=sink) as logger:
        logger.write_sft("agent0", 25, {"loss": 1.5})
        logger.write(0, {"heldout_success": 0.25})
        logger.write(1, {"heldout_success": 0.5, "kl": float("nan")})
        logger.write_reported(1, {"test_success": 0.75})
    [path] = run_files(tmp_path)
    rows = history_rows(path)
    assert rows[0] == {"sft/update": 25, "sft/agent0/loss": 1.5}
    assert rows[1] == {"step": 0, "heldout_success": 0.25}
    assert rows[2]["step"] == 1 and rows[2]["heldout_success"] == 0.5
    assert math.isnan(rows[2]["kl"])  # kept and flagged, as in TensorBoard
    assert rows[3] == {"step": 1, "test_success": 0.75}
    assert {"seed", "train"} <= config_keys(path)


def test_the_same_workdir_continues_the_same_wandb_run(tmp_path):
    for step in (0, 1):
        with MetricsLogger(tmp_path, tensorboard=False,
                           wandb=WandbSink(tmp_path, "mtrl-test", {})) as logger:
            logger.write(step, {"reward_mean": float(step)})
    run_id = (tmp_path / "wandb" / "run_id").read_text().strip()
    paths = run_files(tmp_path)
    assert len(paths) >= 1 and all(p.name == f"run-{run_id}.wandb" for p in paths)
    steps = [row["step"] for p in paths for row in history_rows(p)]
    assert sorted(steps) == [0, 1]


def test_a_project_without_wandb_installed_is_one_line(monkeypatch):
    monkeypatch.setattr(wandb_sink.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ValueError, match=r'pip install "mtrl\[wandb\]"'):
        check_wandb_installed("my-project")
    check_wandb_installed("")  # off: nothing to check
