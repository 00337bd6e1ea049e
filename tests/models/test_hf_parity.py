"""Logit parity with transformers (PyTorch CPU) for Llama 3, Qwen2 and Qwen3, and
checkpoint round trips through transformers."""

import json

import jax.numpy as jnp
import numpy as np
import pytest
import torch
import transformers
from flax import nnx

from mtrl.models import (ModelConfig, Transformer, default_positions, load_hf_checkpoint,
                         save_hf_checkpoint)
from mtrl.models.gguf_convert import PARITY_RTOL, max_relative_error
from mtrl.models.hf_io import INDEX_FILE

# Relative to the reference's largest |logit| (gguf_convert.PARITY_RTOL): an absolute
# 1e-4 fails a 30-layer float32 model at logits of ~38 (1.3e-4 abs, 3e-6 relative).
RTOL = PARITY_RTOL


def rel(got, want, mask=None) -> float:
    got, want = np.asarray(got), np.asarray(want)
    return max_relative_error(got[mask], want[mask]) if mask is not None else \
        max_relative_error(got, want)
VOCAB = 300  # tests/models/conftest.py builds its checkpoints with this vocabulary


def hf_logits(model, tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """transformers logits with the same rotary positions mtrl uses by default."""
    positions = np.asarray(default_positions(jnp.asarray(mask)))
    with torch.no_grad():
        out = model(input_ids=torch.tensor(tokens),
                    attention_mask=torch.tensor(mask.astype(np.int64)),
                    position_ids=torch.tensor(positions, dtype=torch.long))
    return out.logits.float().numpy()


def random_batch(seed: int, batch: int = 3, length: int = 24, pad: bool = False):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, VOCAB, (batch, length))
    mask = np.ones((batch, length), bool)
    if pad:
        mask[0, -7:] = False             # right padding
        mask[1, :5] = False              # left padding
        mask[2, 9:12] = False            # a hole in the middle
    return tokens, mask


@pytest.mark.parametrize("pad", [False, True], ids=["dense", "padded"])
def test_logits_match_transformers(hf_checkpoint, pad):
    family, hf_model, directory = hf_checkpoint
    model = load_hf_checkpoint(directory)
    assert model.config.family == family
    tokens, mask = random_batch(seed=1, pad=pad)
    expected = hf_logits(hf_model, tokens, mask)
    logits = model(jnp.asarray(tokens, jnp.int32), token_mask=jnp.asarray(mask))
    assert logits.dtype == jnp.float32 and logits.shape == expected.shape
    got = np.asarray(logits)
    assert np.isfinite(got).all()
    diff = rel(got, expected, mask)
    print(f"parity {family} pad={pad}: max relative diff {diff:.3g}")
    assert diff <= RTOL
    # The check has teeth: logits are far from constant at the tolerance's scale.
    assert np.ptp(expected[mask]) > 1e4 * RTOL * np.abs(expected[mask]).max()


def test_loaded_config_matches_hf_config(hf_checkpoint):
    family, hf_model, directory = hf_checkpoint
    config = load_hf_checkpoint(directory).config
    hf = hf_model.config
    assert (config.vocab_size, config.hidden_size, config.num_layers) == (
        hf.vocab_size, hf.hidden_size, hf.num_hidden_layers)
    assert config.tie_word_embeddings == hf.tie_word_embeddings
    assert config.head_dim == {"llama": 16, "qwen2": 16, "qwen3": 24}[family]
    assert config.qk_norm == (family == "qwen3")
    assert (config.rope_scaling is not None) == (family == "llama")


def test_round_trip_through_transformers(hf_checkpoint, tmp_path):
    """mtrl save -> transformers from_pretrained -> identical logits (and no missing
    or unexpected keys); then transformers' weights equal the originals."""
    family, hf_model, directory = hf_checkpoint
    model = load_hf_checkpoint(directory)
    save_hf_checkpoint(model, tmp_path)
    reloaded, info = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path, output_loading_info=True, attn_implementation="eager")
    assert type(reloaded).__name__ == type(hf_model).__name__
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    original = hf_model.state_dict()
    for name, tensor in reloaded.state_dict().items():
        assert torch.equal(tensor, original[name]), name
    tokens, mask = random_batch(seed=2, pad=True)
    expected = np.asarray(model(jnp.asarray(tokens, jnp.int32), token_mask=jnp.asarray(mask)))
    assert rel(hf_logits(reloaded.eval(), tokens, mask), expected, mask) <= RTOL


def test_round_trip_from_fresh_mtrl_model(tmp_path):
    """A model born in mtrl (Qwen3 with bias, explicit head_dim) exports losslessly."""
    config = ModelConfig(vocab_size=VOCAB, hidden_size=48, intermediate_size=96, num_layers=2,
                         num_heads=4, num_kv_heads=1, head_dim=20, qk_norm=True,
                         attention_bias=True, attention_out_bias=True, family="qwen3",
                         initializer_range=0.3, eos_token_id=5)
    model = Transformer(config, rngs=nnx.Rngs(3))
    files = save_hf_checkpoint(model, tmp_path)
    assert {f.name for f in files} == {"config.json", "model.safetensors"}
    hf_model = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path, attn_implementation="eager").eval()
    assert hf_model.config.head_dim == 20 and hf_model.config.attention_bias
    tokens, mask = random_batch(seed=3, pad=True)
    expected = np.asarray(model(jnp.asarray(tokens, jnp.int32), token_mask=jnp.asarray(mask)))
    assert rel(hf_logits(hf_model, tokens, mask), expected, mask) <= RTOL
    assert ModelConfig.from_hf_config(json.loads((tmp_path / "config.json").read_text())) == config


def test_sharded_checkpoints(tmp_path, make_hf_model):
    """transformers' own sharded save loads; mtrl's sharded writer round-trips."""
    hf_model = make_hf_model("llama", seed=4)
    hf_dir = tmp_path / "hf"
    hf_model.save_pretrained(hf_dir, max_shard_size="50KB")
    assert (hf_dir / INDEX_FILE).is_file()
    assert len(list(hf_dir.glob("*.safetensors"))) > 1
    model = load_hf_checkpoint(hf_dir)
    tokens, mask = random_batch(seed=5)
    expected = hf_logits(hf_model, tokens, mask)
    got = np.asarray(model(jnp.asarray(tokens, jnp.int32)))
    assert rel(got, expected) <= RTOL

    mtrl_dir = tmp_path / "mtrl"
    files = save_hf_checkpoint(model, mtrl_dir, max_shard_bytes=40_000)
    shards = [f for f in files if f.suffix == ".safetensors"]
    assert len(shards) > 2
    index = json.loads((mtrl_dir / INDEX_FILE).read_text())
    assert set(index["weight_map"].values()) == {f.name for f in shards}
    reloaded = load_hf_checkpoint(mtrl_dir)
    np.testing.assert_array_equal(np.asarray(reloaded(jnp.asarray(tokens, jnp.int32))), got)
    hf_reloaded = transformers.AutoModelForCausalLM.from_pretrained(
        mtrl_dir, attn_implementation="eager").eval()
    assert rel(hf_logits(hf_reloaded, tokens, mask), got) <= RTOL


def test_bfloat16_checkpoint(tmp_path, make_hf_model):
    """A bf16 checkpoint loads as bf16 (no upcast), runs with float32 logits close to
    the float32 reference, and can be upcast on load to match exactly."""
    hf_model = make_hf_model("qwen2", seed=6)
    tokens, mask = random_batch(seed=7, pad=True)
    expected = hf_logits(hf_model, tokens, mask)
    hf_model.to(torch.bfloat16).save_pretrained(tmp_path)
    model = load_hf_checkpoint(tmp_path)
    assert model.config.param_dtype == "bfloat16" and model.config.dtype == "bfloat16"
    assert model.embed_tokens.embedding[...].dtype == jnp.bfloat16
    assert model.layers.self_attn.q_proj.kernel[...].dtype == jnp.bfloat16
    logits = model(jnp.asarray(tokens, jnp.int32), token_mask=jnp.asarray(mask))
    assert logits.dtype == jnp.float32
    error = np.abs(np.asarray(logits) - expected)[mask]
    scale = np.abs(expected[mask]).max()
    assert np.isfinite(error).all() and error.max() <= 0.05 * scale, (error.max(), scale)

    # Weights rounded to bf16 but computed in float32: parity with transformers loading
    # the same file in float32 (a fresh load: `.to(bfloat16)` also rounded the rotary
    # inverse-frequency buffer of hf_model).
    upcast = load_hf_checkpoint(tmp_path, dtype="float32", param_dtype="float32")
    reference = hf_logits(transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path, dtype=torch.float32, attn_implementation="eager").eval(), tokens, mask)
    got = np.asarray(upcast(jnp.asarray(tokens, jnp.int32), token_mask=jnp.asarray(mask)))
    assert rel(got, reference, mask) <= RTOL

    # Saving a bf16 model writes bf16 safetensors.
    out = tmp_path / "resaved"
    save_hf_checkpoint(model, out)
    from safetensors import safe_open
    with safe_open(str(out / "model.safetensors"), framework="numpy") as handle:
        assert str(handle.get_tensor("model.norm.weight").dtype) == "bfloat16"


def test_bad_checkpoints_are_rejected(hf_checkpoint, tmp_path):
    family, hf_model, directory = hf_checkpoint
    from safetensors.numpy import load_file, save_file
    tensors = load_file(str(directory / "model.safetensors"))
    (tmp_path / "config.json").write_text((directory / "config.json").read_text())
    missing = dict(tensors)
    missing.pop("model.layers.1.mlp.up_proj.weight")
    save_file(missing, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ValueError, match="up_proj"):
        load_hf_checkpoint(tmp_path)
    extra = dict(tensors, **{"model.layers.0.mlp.extra.weight": np.zeros(3, np.float32)})
    save_file(extra, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ValueError, match="no place"):
        load_hf_checkpoint(tmp_path)
    wrong = dict(tensors)
    wrong["model.norm.weight"] = np.zeros(5, np.float32)
    save_file(wrong, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ValueError, match="shape"):
        load_hf_checkpoint(tmp_path)
