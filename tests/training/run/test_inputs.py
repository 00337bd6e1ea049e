"""Missing inputs (mtrl/training/run/inputs.py): for every experiment config, each file
it names that is not on disk is one line naming the field, the path and what makes it,
all at once, before any work; the launcher stops there and leaves no workdir."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from mtrl.training.config import module_from_file, resolve_paths
from mtrl.training.run.inputs import config_inputs_missing, missing_inputs

ROOT = pathlib.Path(__file__).resolve().parents[3]
CONFIG_SPECS = [p.name for p in sorted((ROOT / "experiments" / "configs").glob("*.py"))
                ] + ["tool.py:mbpp"]
FIELDS = ("model.hf_checkpoint", "data.path", "data.options.train_ids_file")


def _load(spec: str):
    name, _, argument = spec.partition(":")
    path = ROOT / "experiments" / "configs" / name
    config = module_from_file(path).get_config(*([argument] if argument else []))
    resolve_paths(config, path)
    return config, f"experiments/configs/{spec}"


def _field(config, dotted):
    node = config
    for name in dotted.split("."):
        if name not in node:
            return None
        node = node[name]
    return node or None


def _set(config, dotted, value):
    *parents, name = dotted.split(".")
    node = config
    for parent in parents:
        node = node[parent]
    node[name] = value


@pytest.mark.parametrize("spec", CONFIG_SPECS)
def test_every_missing_input_of_every_config_is_one_line_with_its_maker(spec, tmp_path):
    config, config_file = _load(spec)
    named = [f for f in FIELDS if _field(config, f)]
    for field in named:  # each input the config names, moved where nothing is
        _set(config, field, str(tmp_path / "missing" / pathlib.Path(_field(config, field)).name))
    lines = config_inputs_missing(config, config_file)
    assert len(lines) == len(named), lines
    for field, line in zip(named, lines):
        assert "\n" not in line
        assert line.startswith(f"config.{field}: {tmp_path / 'missing'}"), line
        assert "does not exist" in line
        if field == "data.path":
            assert "../shared/data/" in line
        else:
            assert "make it with: " in line or "point it at" in line
    if "data.options.train_ids_file" in named:  # the band command runs this config
        assert f"--config={config_file} " in lines[-1]
    if spec.startswith("smollm2"):
        assert "python -m tools.get_smollm2 --out " in lines[0]


def test_present_inputs_are_not_reported(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"")
    band = tmp_path / "band.json"
    band.write_text(json.dumps({"task_ids": ["1"]}))
    assert missing_inputs(hf_checkpoint=str(model), tokenizer=str(model), data_name="gsm8k",
                          data_path=str(tmp_path), train_ids_file=str(band)) == []


def test_a_model_directory_without_config_or_weights_says_which(tmp_path):
    model = tmp_path / "smollm2-135m-instruct"
    model.mkdir()
    [line] = missing_inputs(hf_checkpoint=str(model))
    assert "has no config.json" in line and "tools.get_smollm2 --out " + str(model) in line
    (model / "config.json").write_text("{}")
    [line] = missing_inputs(hf_checkpoint=str(model))
    assert "has no weights file (*.safetensors)" in line
    [line] = missing_inputs(tokenizer=str(tmp_path / "tok"))
    assert line.startswith(f"config.tokenizer: {tmp_path / 'tok'} does not exist")


def test_the_launcher_stops_before_any_work_and_leaves_no_workdir(tmp_path):
    workdir = tmp_path / "runs" / "smollm2"
    result = subprocess.run(
        [sys.executable, "-m", "mtrl.train", "--config=experiments/configs/smollm2_mbpp.py",
         f"--config.model.hf_checkpoint={tmp_path / 'none'}", f"--config.data.path={tmp_path}",
         f"--config.data.options.train_ids_file={tmp_path / 'band.json'}",
         f"--workdir={workdir}", "--smoke"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=120)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert [line.split(":", 2)[1].strip() for line in lines] == [
        "config.model.hf_checkpoint", "config.data.options.train_ids_file"], result.stderr
    assert all(line.startswith("error: ") for line in lines)
    assert not (tmp_path / "runs").exists()
