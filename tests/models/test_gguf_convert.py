"""GGUF -> Hugging Face directory (mtrl/models/gguf_convert.py) on a small GGUF written
by the test (no download): the quantizer marker is dropped, the directory holds weights,
config, generation config, tokenizer files and chat template, and mtrl's logits equal
transformers' (relative tolerance)."""

import json

import pytest

pytest.importorskip("gguf")
pytest.importorskip("accelerate")

from mtrl.models.gguf_convert import (PARITY_RTOL, convert_gguf, find_package_gguf,  # noqa: E402
                                      max_relative_error, verify_hf_directory)
from mtrl.tokenizers import HFTokenizer  # noqa: E402
from tests.models.gguf_small import write_small_gguf  # noqa: E402


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    root = tmp_path_factory.mktemp("gguf")
    return convert_gguf(write_small_gguf(root / "small.gguf"), root / "hf")


def test_plain_save_pretrained_refuses_a_gguf_loaded_model(tmp_path):
    """The defect the conversion works around (fails if transformers stops refusing,
    in which case drop_gguf_quantizer may go)."""
    from transformers import AutoModelForCausalLM

    path = write_small_gguf(tmp_path / "small.gguf")
    model = AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file=path.name)
    with pytest.raises(ValueError, match="not serializable"):
        model.save_pretrained(tmp_path / "out")


def test_directory_is_complete_and_unquantized(converted):
    names = {p.name for p in converted.iterdir()}
    assert {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json",
            "tokenizer_config.json"} <= names
    config = json.loads((converted / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "llama"
    generation = json.loads((converted / "generation_config.json").read_text())
    tok = HFTokenizer.from_pretrained(converted)
    assert generation["eos_token_id"] == tok.eos_id and tok.eos_text == "<|im_end|>"
    assert tok.has_chat_template
    assert tok.apply_chat_template([{"role": "user", "content": "hi"}]).endswith(
        "<|im_start|>assistant\n")


def test_logits_equal_transformers(converted):
    report = verify_hf_directory(converted)
    assert report["max_relative_error"] <= PARITY_RTOL
    assert report["num_layers"] == 2 and report["max_abs_logit"] > 0


def test_relative_error_has_teeth():
    assert max_relative_error([[1.0, 40.0]], [[1.0, 40.0]]) == 0.0
    assert max_relative_error([[1.0, 40.001]], [[1.0, 40.0]]) == pytest.approx(2.5e-5)
    with pytest.raises(ValueError, match="shapes"):
        max_relative_error([1.0], [1.0, 2.0])


def test_missing_gguf_and_package_are_one_line_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no GGUF file"):
        convert_gguf(tmp_path / "none.gguf", tmp_path / "out")
    with pytest.raises(FileNotFoundError, match="not installed"):
        find_package_gguf("mtrl-no-such-package")
