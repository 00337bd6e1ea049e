"""A trained policy as a Hugging Face directory that transformers' Auto* classes and
mtrl both load again: weights and config.json (models/hf_io.py), the tokenizer files
with the chat template, and generation_config.json (eos = the end-of-turn token the
sampler stopped on), and checksums.sha256 of the weights, checked when mtrl loads them."""

from __future__ import annotations

import json
import os
import pathlib

from mtrl.checksums import write_manifest
from mtrl.models.hf_io import save_hf_checkpoint
from mtrl.models.transformer import Transformer
from mtrl.tokenizers import HFTokenizer


def generation_config(tokenizer) -> dict:
    """generation_config.json's contents: the special ids generation stops and pads on."""
    out = {"eos_token_id": tokenizer.eos_id, "pad_token_id": tokenizer.pad_id}
    if tokenizer.bos_id is not None:
        out["bos_token_id"] = tokenizer.bos_id
    return out


def export_hf_directory(model: Transformer, tokenizer, path: str | os.PathLike
                        ) -> pathlib.Path:
    """Writes weights, config, tokenizer files (Hugging Face tokenizers; the byte
    tokenizer has none: such a model is loaded with config.tokenizer = "byte") and
    generation config into `path`."""
    out = pathlib.Path(path)
    weights = save_hf_checkpoint(model, out)
    if isinstance(tokenizer, HFTokenizer):
        tokenizer.hf_tokenizer.save_pretrained(out)
    (out / "generation_config.json").write_text(json.dumps(generation_config(tokenizer),
                                                           indent=2))
    write_manifest(out, [p for p in weights if p.suffix == ".safetensors"])  # checked on load
    return out


def model_report(model: Transformer, source: str | None) -> str:
    """One line for the start of a run: where the weights came from, their size and the
    parameter (storage) and compute dtypes."""
    import jax
    from flax import nnx

    params = sum(int(x.size) for x in jax.tree.leaves(nnx.state(model, nnx.Param)))
    c = model.config
    origin = f"Hugging Face checkpoint {source}" if source else f"{c.family} preset"
    return (f"model: {origin}, {params / 1e6:.1f}M parameters, {c.num_layers} layers, "
            f"params {c.param_dtype}, compute {c.dtype}")


def export_agents(graphdef, agent_params, tokenizer, out: str | os.PathLike, *,
                  write: bool = True) -> str:
    """One Hugging Face directory per agent's parameters, `out`/agent{a} (written by
    the process that writes files: `write`); returns `out`."""
    from flax import nnx
    out = pathlib.Path(out)
    for a, params in enumerate(agent_params):
        if write:
            export_hf_directory(nnx.merge(graphdef, params), tokenizer, out / f"agent{a}")
    return str(out)
