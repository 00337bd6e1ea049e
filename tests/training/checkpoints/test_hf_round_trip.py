"""Hugging Face checkpoints through the run builder and back out: model.dtype
is honoured, the export carries tokenizer files, chat template and generation config,
and a checkpoint without tokenizer files is an error instead of a silent byte tokenizer."""

import json

import pytest
from flax import nnx

from mtrl.models import PRESETS, Transformer, save_hf_checkpoint
from mtrl.tokenizers import HFTokenizer, load_tokenizer
from mtrl.training.run.build import build_models, build_tokenizer, check_tokenizer
from mtrl.training.config import base_config
from mtrl.training.config.readers import read_section
from mtrl.training.checkpoints.hf_export import export_hf_directory, model_report
from tests.tokenizers.chatml import build_chatml_tokenizer


def tiny_llama(vocab: int) -> Transformer:
    config = PRESETS.get("tiny").replace(vocab_size=vocab)
    return Transformer(config, rngs=nnx.Rngs(0))


@pytest.fixture(scope="module")
def chat_checkpoint(tmp_path_factory):
    """A tiny model with a ChatML tokenizer saved beside it."""
    path = tmp_path_factory.mktemp("chat_ckpt")
    save_hf_checkpoint(tiny_llama(512), path)
    build_chatml_tokenizer().save_pretrained(path)
    return path


def config_for(path, dtype="float32", tokenizer="byte"):
    c = base_config()
    c.model.preset = ""
    c.model.hf_checkpoint = str(path)
    c.model.dtype = dtype
    c.tokenizer = tokenizer
    return c


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_model_dtype_is_the_compute_dtype_of_a_hf_checkpoint(chat_checkpoint, dtype):
    c = config_for(chat_checkpoint, dtype)
    models, _ = build_models(c.seed, read_section(c, "model"), 1)
    assert models[0].config.dtype == dtype
    assert models[0].config.param_dtype == "float32"  # the checkpoint's storage dtype
    assert f"compute {dtype}" in model_report(models[0], str(chat_checkpoint))
    assert "params float32" in model_report(models[0], str(chat_checkpoint))


def test_overrides_still_win_over_model_dtype(chat_checkpoint):
    c = config_for(chat_checkpoint, "bfloat16")
    c.model.overrides = {"dtype": "float32"}
    models, _ = build_models(c.seed, read_section(c, "model"), 1)
    assert models[0].config.dtype == "float32"


def test_export_round_trips_with_tokenizer_and_generation_config(chat_checkpoint, tmp_path):
    c = config_for(chat_checkpoint)
    tokenizer = build_tokenizer(c.tokenizer, read_section(c, "model"))
    assert isinstance(tokenizer, HFTokenizer)
    models, _ = build_models(c.seed, read_section(c, "model"), 1)
    out = export_hf_directory(models[0], tokenizer, tmp_path / "export")
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", "generation_config.json",
            "tokenizer_config.json", "tokenizer.json"} <= names
    generation = json.loads((out / "generation_config.json").read_text())
    assert generation["eos_token_id"] == tokenizer.eos_id
    import transformers
    auto = transformers.AutoTokenizer.from_pretrained(out, local_files_only=True)
    assert auto.chat_template == tokenizer.hf_tokenizer.chat_template
    # ... and mtrl picks the tokenizer up from the exported directory again.
    again = build_tokenizer(config_for(out).tokenizer, read_section(config_for(out), "model"))
    assert isinstance(again, HFTokenizer) and again.eos_text == "<|im_end|>"


def test_checkpoint_without_tokenizer_files_is_an_error(tmp_path):
    save_hf_checkpoint(tiny_llama(512), tmp_path)  # weights only, a 512-token vocabulary
    with pytest.raises(ValueError, match="config.tokenizer: .* no tokenizer files"):
        build_tokenizer(config_for(tmp_path, tokenizer=str(tmp_path)).tokenizer,
                        read_section(config_for(tmp_path), "model"))
    c = config_for(tmp_path)  # tokenizer "byte", the old silent fallback
    tokenizer = build_tokenizer(c.tokenizer, read_section(c, "model"))
    models, _ = build_models(c.seed, read_section(c, "model"), 1)
    with pytest.raises(ValueError, match="config.tokenizer: .*no tokenizer files"):
        check_tokenizer(tokenizer, models[0].config, str(tmp_path))


def test_byte_models_exported_without_tokenizer_still_load(tmp_path):
    save_hf_checkpoint(tiny_llama(259), tmp_path)  # the byte tokenizer's vocabulary
    c = config_for(tmp_path)
    tokenizer = build_tokenizer(c.tokenizer, read_section(c, "model"))
    models, _ = build_models(c.seed, read_section(c, "model"), 1)
    check_tokenizer(tokenizer, models[0].config, str(tmp_path))  # no error
    assert load_tokenizer("byte").vocab_size == 259
