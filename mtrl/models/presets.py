"""Named model configurations (`PRESETS.get(name)`, or `preset(name, **overrides)`).

  tiny        ~1.0M parameters, CPU tests; vocab 259 = the byte tokenizer's
              (bytes 0-255, pad 256, bos 257, eos 258).
  qwen2-3m    ~3.1M-parameter Qwen2-style model on the byte vocabulary, the benchmark
              size (q/k/v bias, tied embeddings, 4 layers, 8 heads over 2 kv heads).
  smollm2-135m, qwen2-0.5b, qwen2.5-0.5b, llama3.2-1b, qwen3-0.6b
              shapes of the released checkpoints (reference; load weights with
              load_hf_checkpoint, which reads the shapes from config.json).
"""

from __future__ import annotations

from mtrl.models.config import Llama3RopeScaling, ModelConfig
from mtrl.registry import Registry

PRESETS: Registry[ModelConfig] = Registry("model preset")

_BYTE_IDS = dict(vocab_size=259, pad_token_id=256, bos_token_id=257, eos_token_id=258)

PRESETS.register("tiny")(ModelConfig(
    hidden_size=128, intermediate_size=512, num_layers=4, num_heads=4, num_kv_heads=2,
    head_dim=32, rope_theta=10000.0, tie_word_embeddings=True, attention_bias=True,
    family="qwen2", max_position_embeddings=2048, **_BYTE_IDS))

PRESETS.register("qwen2-3m")(ModelConfig(
    hidden_size=256, intermediate_size=768, num_layers=4, num_heads=8, num_kv_heads=2,
    head_dim=32, rope_theta=10000.0, tie_word_embeddings=True, attention_bias=True,
    family="qwen2", max_position_embeddings=4096, **_BYTE_IDS))

PRESETS.register("smollm2-135m")(ModelConfig(
    vocab_size=49152, hidden_size=576, intermediate_size=1536, num_layers=30, num_heads=9,
    num_kv_heads=3, head_dim=64, rope_theta=100000.0, rms_norm_eps=1e-5,
    tie_word_embeddings=True, family="llama", max_position_embeddings=8192,
    dtype="bfloat16", param_dtype="bfloat16", bos_token_id=1, eos_token_id=2,
    pad_token_id=2))

_QWEN2_SMALL = dict(
    vocab_size=151936, hidden_size=896, intermediate_size=4864, num_layers=24, num_heads=14,
    num_kv_heads=2, head_dim=64, rope_theta=1000000.0, rms_norm_eps=1e-6,
    tie_word_embeddings=True, attention_bias=True, family="qwen2",
    max_position_embeddings=32768, dtype="bfloat16", param_dtype="bfloat16",
    bos_token_id=151643)
PRESETS.register("qwen2-0.5b")(ModelConfig(eos_token_id=151643, **_QWEN2_SMALL))
PRESETS.register("qwen2.5-0.5b")(ModelConfig(eos_token_id=151643, **_QWEN2_SMALL))

PRESETS.register("llama3.2-1b")(ModelConfig(
    vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_layers=16, num_heads=32,
    num_kv_heads=8, head_dim=64, rope_theta=500000.0,
    rope_scaling=Llama3RopeScaling(factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                   original_max_position_embeddings=8192),
    rms_norm_eps=1e-5, tie_word_embeddings=True, family="llama",
    max_position_embeddings=131072, dtype="bfloat16", param_dtype="bfloat16",
    bos_token_id=128000, eos_token_id=128001))

PRESETS.register("qwen3-0.6b")(ModelConfig(
    vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_layers=28, num_heads=16,
    num_kv_heads=8, head_dim=128, rope_theta=1000000.0, rms_norm_eps=1e-6,
    tie_word_embeddings=True, qk_norm=True, family="qwen3", max_position_embeddings=40960,
    dtype="bfloat16", param_dtype="bfloat16", bos_token_id=151643, eos_token_id=151645))


def preset(name: str, **overrides) -> ModelConfig:
    """A named configuration from PRESETS, with optional field overrides."""
    return PRESETS.get(name).replace(**overrides)
