"""Decoder-only transformers (Llama 3, Qwen2, Qwen3) in Flax NNX and Hugging Face I/O.

Public API:
  ModelConfig, Llama3RopeScaling       frozen configs (ModelConfig.from_hf_config / to_hf_config)
  PRESETS, preset(name, **overrides)   named configs ('tiny', 'qwen2-3m', ...)
  Transformer                          model(tokens, positions=, token_mask=, cache=)
  KVCache, init_cache                  preallocated key/value cache
  default_positions                    the rotary positions the model uses by default
  load_hf_checkpoint, save_hf_checkpoint   config.json + *.safetensors, no torch
  LoRAConfig                           low-rank adapters (lora.py; states: adapters.py)
"""

from mtrl.models.config import Llama3RopeScaling, ModelConfig
from mtrl.models.hf_io import load_hf_checkpoint, save_hf_checkpoint
from mtrl.models.kv_cache import KVCache
from mtrl.models.lora import LoRAConfig
from mtrl.models.presets import PRESETS, preset
from mtrl.models.transformer import Transformer, default_positions, init_cache

__all__ = [
    "KVCache",
    "LoRAConfig",
    "Llama3RopeScaling",
    "ModelConfig",
    "PRESETS",
    "Transformer",
    "default_positions",
    "init_cache",
    "preset",
    "load_hf_checkpoint",
    "save_hf_checkpoint",
]
