"""File problems end in one line naming the file (and what to do), and the paths a
config names are found from the checkout or the config file, whatever the current
directory."""

import os
import pathlib
import stat

import pytest
from ml_collections import ConfigDict

from mtrl.training.config import base_config
from mtrl.training.config import resolve_paths
from mtrl.training.loop.trainer import Trainer
from tests.test_train_cli import error_lines, launch

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_a_config_file_suffix_typo_shows_the_config_files_own_message():
    result = launch("--config=experiments/configs/tool.py:nope")
    lines = error_lines(result)
    assert result.returncode != 0 and len(lines) == 1, result.stderr
    assert "unknown suite 'nope'; valid: gsm8k, mbpp" in lines[0], lines[0]


def test_a_workdir_that_cannot_be_written_is_one_line_naming_it(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(ValueError) as refused:
        Trainer(base_config(), blocker / "run", show_progress=False)
    message = str(refused.value)
    assert "\n" not in message and str(blocker / "run") in message and "--workdir" in message
    if os.getuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
        with pytest.raises(ValueError, match="not writable"):
            Trainer(base_config(), locked, show_progress=False)


def test_a_corrupt_config_json_in_a_workdir_is_one_line_naming_it(tmp_path):
    (tmp_path / "sft_checkpoints" / "10").mkdir(parents=True)  # a run to resume
    (tmp_path / "config.json").write_text('{"model": {"preset": "tiny"')  # cut short
    with pytest.raises(ValueError) as refused:
        Trainer(base_config(), tmp_path, show_progress=False)
    message = str(refused.value)
    assert "\n" not in message and str(tmp_path / "config.json") in message
    assert "delete it" in message


def test_relative_paths_are_found_from_the_checkout_then_the_config_file(tmp_path):
    (tmp_path / "my_data").mkdir()
    config = ConfigDict({"data": {"path": "../shared/data/gsm8k",
                                  "options": {"train_ids_file": "my_data"}},
                         "model": {"hf_checkpoint": "", "preset": "tiny"},
                         "tokenizer": "byte"})
    resolve_paths(config, tmp_path / "cfg.py")
    assert config.data.path == str((ROOT / "../shared/data/gsm8k").resolve())
    assert config.data.options.train_ids_file == str(tmp_path / "my_data")
    assert config.model.hf_checkpoint == "" and config.tokenizer == "byte"  # not paths
    config.data.path = "/abs/elsewhere"
    resolve_paths(config, tmp_path / "cfg.py")
    assert config.data.path == "/abs/elsewhere"
