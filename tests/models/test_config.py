"""ModelConfig validation, Hugging Face config.json conversion and presets."""

import dataclasses

import jax.numpy as jnp
import pytest
import torch
import transformers

from mtrl.models import PRESETS, Llama3RopeScaling, ModelConfig, preset

BASE = dict(vocab_size=300, hidden_size=64, intermediate_size=128, num_layers=2, num_heads=4,
            num_kv_heads=2)


def test_defaults_and_canonical_dtypes():
    config = ModelConfig(**BASE, dtype=jnp.bfloat16, param_dtype="float32")
    assert config.head_dim == 16 and config.num_groups == 2
    assert config.dtype == "bfloat16" and config.compute_dtype == jnp.bfloat16
    assert config.param_dtype == "float32"
    hash(config)  # static argument of jitted functions
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.vocab_size = 3


@pytest.mark.parametrize("changes,message", [
    (dict(num_kv_heads=3), "multiple of num_kv_heads"),
    (dict(hidden_size=66, num_heads=4), "give head_dim"),
    (dict(head_dim=15), "even"),
    (dict(vocab_size=0), "vocab_size"),
    (dict(num_layers=2.0), "num_layers"),
    (dict(dtype="int32"), "floating"),
    (dict(dtype="float128x"), "unknown dtype"),
    (dict(family="gpt2"), "family"),
    (dict(family="qwen2"), "attention_bias=True"),
    (dict(family="qwen3"), "qk_norm=True"),
    (dict(family="llama", qk_norm=True), "qk_norm=False"),
    (dict(attention_bias=True), "attention_out_bias"),
    (dict(eos_token_id=300), "outside the vocabulary"),
    (dict(pad_token_id=[1, 2]), "single id"),
    (dict(rope_theta=-1.0), "rope_theta"),
    (dict(rms_norm_eps=0.0), "rms_norm_eps"),
])
def test_validation(changes, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(**{**BASE, **changes})


def test_rope_scaling_validation():
    with pytest.raises(ValueError, match="low_freq_factor"):
        Llama3RopeScaling(low_freq_factor=4.0, high_freq_factor=1.0)
    config = ModelConfig(**BASE, rope_scaling=dict(rope_type="llama3", factor=2.0,
                                                    low_freq_factor=1.0, high_freq_factor=2.0,
                                                    original_max_position_embeddings=32))
    assert config.rope_scaling == Llama3RopeScaling(2.0, 1.0, 2.0, 32)


@pytest.mark.parametrize("name", ["llama", "qwen2", "qwen3"])
def test_hf_config_round_trip_through_transformers(name):
    family_fields = {
        "llama": dict(family="llama", attention_bias=True, attention_out_bias=True,
                      mlp_bias=True, rope_scaling=Llama3RopeScaling(8.0, 1.0, 4.0, 64),
                      rope_theta=500000.0),
        "qwen2": dict(family="qwen2", attention_bias=True, tie_word_embeddings=True),
        "qwen3": dict(family="qwen3", qk_norm=True, head_dim=24),
    }[name]
    config = ModelConfig(**BASE, **family_fields, eos_token_id=(2, 5), bos_token_id=1,
                         dtype="bfloat16", param_dtype="bfloat16")
    hf_dict = config.to_hf_config()
    hf_config = transformers.AutoConfig.for_model(**hf_dict)
    assert type(hf_config).__name__.lower().startswith(name)
    assert hf_config.head_dim == config.head_dim
    if name == "llama":
        assert hf_config.rope_parameters["rope_type"] == "llama3"
        assert hf_config.rope_parameters["factor"] == 8.0
    assert hf_config.rope_parameters["rope_theta"] == config.rope_theta
    # transformers' own serialisation reads back to the same config.
    assert ModelConfig.from_hf_config(hf_config.to_dict()) == config
    assert ModelConfig.from_hf_config(hf_dict) == config


def test_from_legacy_hf_config_and_overrides():
    legacy = {"model_type": "llama", "vocab_size": 300, "hidden_size": 64,
              "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "rope_theta": 500000.0, "torch_dtype": "bfloat16", "max_position_embeddings": 128,
              "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0},
              "eos_token_id": [7, 8]}
    config = ModelConfig.from_hf_config(legacy, dtype="float32")
    assert config.num_kv_heads == 4 and config.head_dim == 16
    assert config.rope_theta == 500000.0 and config.rope_scaling.factor == 32.0
    # original_max_position_embeddings falls back to max_position_embeddings (transformers).
    assert config.rope_scaling.original_max_position_embeddings == 128
    assert config.dtype == "float32" and config.param_dtype == "bfloat16"
    assert config.eos_token_id == (7, 8)
    for bad, message in [({"model_type": "gpt2"}, "model_type"),
                         ({"hidden_act": "gelu"}, "SwiGLU"),
                         ({"rope_scaling": {"rope_type": "yarn", "factor": 2.0}}, "rope_type")]:
        with pytest.raises(ValueError, match=message):
            ModelConfig.from_hf_config({**legacy, **bad})


def test_presets():
    assert set(PRESETS.names()) >= {"tiny", "qwen2-3m", "qwen2-0.5b", "llama3.2-1b", "qwen3-0.6b"}
    tiny = preset("tiny")
    assert tiny.vocab_size >= 259 and 0.8e6 <= tiny.num_params() <= 1.3e6
    assert tiny.dtype == "float32"
    assert 2.5e6 <= PRESETS.get("qwen2-3m").num_params() <= 3.5e6
    assert preset("tiny", dtype="bfloat16").dtype == "bfloat16"
    with pytest.raises(KeyError, match="tiny"):
        PRESETS.get("huge")
    # Published parameter counts of the released checkpoints.
    assert PRESETS.get("qwen2.5-0.5b").num_params() == 494_032_768
    assert PRESETS.get("llama3.2-1b").num_params() == 1_235_814_400


@pytest.mark.parametrize("name", ["tiny", "qwen2-3m", "qwen2-0.5b", "llama3.2-1b", "qwen3-0.6b"])
def test_preset_parameter_count_matches_transformers(name):
    """The exported architecture has exactly num_params parameters (built on the meta
    device: no memory)."""
    config = PRESETS.get(name)
    hf_config = transformers.AutoConfig.for_model(**config.to_hf_config())
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(hf_config)
    assert sum(p.numel() for p in model.parameters()) == config.num_params()
