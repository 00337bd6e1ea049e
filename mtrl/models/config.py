"""Decoder configuration for the Llama 3, Qwen2 and Qwen3 families.

`ModelConfig` is a frozen, hashable dataclass (it is a static argument of jitted
functions). It reads and writes Hugging Face `config.json` dictionaries:

  ModelConfig.from_hf_config(json.load(open("config.json")))
  config.to_hf_config()   # what transformers needs to rebuild the architecture

Family differences, all expressed as flags so one implementation covers them:

  family  attention_bias (q/k/v)  attention_out_bias (o)  qk_norm  mlp_bias
  llama   attention_bias          == attention_bias       no       mlp_bias
  qwen2   always                  never                   no       never
  qwen3   attention_bias          == attention_bias       yes      never

`family` only decides the exported architecture name; `__post_init__` rejects flag
combinations that the family's transformers class cannot represent, so every valid
config exports losslessly.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax.numpy as jnp

from mtrl.models.head import LOGITS_CHUNK
from mtrl.models.lora import LoRAConfig

FAMILIES = ("llama", "qwen2", "qwen3")
_ARCHITECTURES = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
                  "qwen3": "Qwen3ForCausalLM"}
_DTYPES = ("float32", "bfloat16", "float16")
# ModelConfig.attention (mtrl.models.attention, which imports this module, repeats it).
ATTENTION = ("auto", "chunked", "xla", "cudnn", "reference")
# ModelConfig.matmul (mtrl.models.matmul repeats it).
MATMULS = ("auto", "xla", "onednn")
# ModelConfig.decode_attention (mtrl.models.cached_attention repeats it).
DECODE_ATTENTIONS = ("auto", "einsum", "kernel")
# ModelConfig.layer_loop, and the depth up to which "auto" unrolls.
LAYER_LOOPS = ("auto", "scan", "unroll")
UNROLL_LAYERS_UP_TO = 4


def canonical_dtype(dtype: Any) -> str:
    """'float32' | 'bfloat16' | 'float16' for a string, numpy or jnp dtype."""
    try:
        name = jnp.dtype(dtype).name
    except TypeError as error:
        raise ValueError(f"unknown dtype {dtype!r}; valid: {_DTYPES}") from error
    if name not in _DTYPES:
        raise ValueError(f"dtype {name!r} is not a floating model dtype; valid: {_DTYPES}")
    return name


@dataclasses.dataclass(frozen=True)
class Llama3RopeScaling:
    """Llama 3.1 frequency-dependent rotary scaling (`rope_type: llama3` in transformers).

    Wavelengths longer than original_max_position_embeddings / low_freq_factor are
    divided by `factor`, shorter than original_max_position_embeddings / high_freq_factor
    are kept, and the band between is interpolated smoothly (see rope.py).
    """

    factor: float = 8.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position_embeddings: int = 8192

    def __post_init__(self):
        if not self.factor > 0:
            raise ValueError(f"rope factor must be > 0, got {self.factor}")
        if not 0 < self.low_freq_factor < self.high_freq_factor:
            raise ValueError("need 0 < low_freq_factor < high_freq_factor, got "
                             f"{self.low_freq_factor}, {self.high_freq_factor}")
        if self.original_max_position_embeddings <= 0:
            raise ValueError("original_max_position_embeddings must be > 0")

    def to_hf(self) -> dict[str, Any]:
        return {"rope_type": "llama3", "factor": float(self.factor),
                "low_freq_factor": float(self.low_freq_factor),
                "high_freq_factor": float(self.high_freq_factor),
                "original_max_position_embeddings": int(self.original_max_position_embeddings)}


def _token_ids(value: Any, name: str) -> int | tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        ids = tuple(int(v) for v in value)
        if not ids:
            return None
        return ids[0] if len(ids) == 1 else ids
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, a sequence of ints or None, got {value!r}")
    return int(value)


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Shape and numerics of a decoder-only transformer.

    head_dim may differ from hidden_size // num_heads (Qwen3); None means that ratio.
    dtype is the compute dtype (activations, K/V cache), param_dtype the storage dtype of
    the weights; both accept strings or jnp dtypes and are stored as canonical strings.
    Logits are float32 whatever these are.
    attention: how the cache-free forward attends (mtrl/models/attention.py): "auto"
    (cuDNN on a GPU where it can, else "chunked": query blocks, memory linear in the
    length), "chunked", "xla" / "cudnn" (jax.nn.dot_product_attention) or "reference"
    (the explicit einsum). Not part of the checkpoint.
    lora: low-rank adapters on the attention and MLP projections (mtrl/models/lora.py;
    build an adapted model from a base one with adapters.adapt), or None. Not part of
    the Hugging Face config: an export holds merged weights.
    matmul: where the projections and the output layer multiply (mtrl/models/matmul.py):
    "auto" (oneDNN on a CPU with AMX-BF16 units and the kernel built, for a bfloat16
    compute dtype; else XLA), "xla" or "onednn". Not part of the checkpoint.
    decode_attention: how a cached forward's single new token attends
    (mtrl/models/cached_attention.py): "auto" (the fused CPU kernel on a one-device CPU
    backend with the kernel library built, else the einsum), "einsum" or "kernel".
    Not part of the checkpoint.
    logits_chunk: tokens whose logits a training pass holds at once where it needs the
    log-probability of given tokens (RL update, reference pass, SFT, answer scoring:
    mtrl/models/head.py projects that many at a time, rematerialised in the backward
    pass); 0 projects all of them at once. The same values either way, up to float32
    summation order. Not part of the checkpoint.
    layer_loop: how the cache-free forward (training, scoring) runs its stacked layers:
    "scan" (one lax.scan: compile time independent of depth), "unroll" (a Python loop
    over static per-layer slices: no stacked residual buffers or dynamic slices, the
    XLA CPU gradient step of the default's 2-layer model ~1.2x faster) or "auto"
    (unroll up to UNROLL_LAYERS_UP_TO layers, else scan). The same math. Not part of
    the checkpoint.
    """

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int | None = None
    rope_theta: float = 10000.0
    rope_scaling: Llama3RopeScaling | None = None
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    attention_out_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False
    max_position_embeddings: int = 4096
    dtype: Any = "float32"
    param_dtype: Any = "float32"
    family: str = "llama"
    bos_token_id: int | None = None
    eos_token_id: int | tuple[int, ...] | None = None
    pad_token_id: int | None = None
    initializer_range: float = 0.02
    attention: str = "auto"
    lora: LoRAConfig | None = None
    matmul: str = "auto"
    decode_attention: str = "auto"
    logits_chunk: int = LOGITS_CHUNK
    layer_loop: str = "auto"

    def __post_init__(self):
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_layers",
                     "num_heads", "num_kv_heads", "max_position_embeddings"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.head_dim is None:
            if self.hidden_size % self.num_heads:
                raise ValueError(f"hidden_size {self.hidden_size} is not divisible by "
                                 f"num_heads {self.num_heads}; give head_dim explicitly")
            set_("head_dim", self.hidden_size // self.num_heads)
        if not isinstance(self.head_dim, int) or self.head_dim <= 0 or self.head_dim % 2:
            raise ValueError(f"head_dim must be a positive even int (rotary halves), "
                             f"got {self.head_dim!r}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads {self.num_heads} must be a multiple of "
                             f"num_kv_heads {self.num_kv_heads} (grouped-query attention)")
        if not (self.rope_theta > 0 and math.isfinite(self.rope_theta)):
            raise ValueError(f"rope_theta must be finite and > 0, got {self.rope_theta}")
        set_("rope_theta", float(self.rope_theta))
        if isinstance(self.rope_scaling, dict):
            set_("rope_scaling", _rope_scaling_from_dict(self.rope_scaling))
        if self.rope_scaling is not None and not isinstance(self.rope_scaling, Llama3RopeScaling):
            raise ValueError(f"rope_scaling must be Llama3RopeScaling or None, "
                             f"got {self.rope_scaling!r}")
        if not self.rms_norm_eps > 0:
            raise ValueError(f"rms_norm_eps must be > 0, got {self.rms_norm_eps}")
        if not self.initializer_range > 0:
            raise ValueError(f"initializer_range must be > 0, got {self.initializer_range}")
        set_("dtype", canonical_dtype(self.dtype))
        set_("param_dtype", canonical_dtype(self.param_dtype))
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {self.family!r}")
        if self.attention not in ATTENTION:
            raise ValueError(f"attention must be one of {ATTENTION}, got {self.attention!r}")
        if self.matmul not in MATMULS:
            raise ValueError(f"matmul must be one of {MATMULS}, got {self.matmul!r}")
        if self.decode_attention not in DECODE_ATTENTIONS:
            raise ValueError(f"decode_attention must be one of {DECODE_ATTENTIONS}, got "
                             f"{self.decode_attention!r}")
        if self.layer_loop not in LAYER_LOOPS:
            raise ValueError(f"layer_loop must be one of {LAYER_LOOPS}, got "
                             f"{self.layer_loop!r}")
        if isinstance(self.logits_chunk, bool) or not isinstance(self.logits_chunk, int) \
                or self.logits_chunk < 0:
            raise ValueError(f"logits_chunk must be an int >= 0 (0: the whole head), got "
                             f"{self.logits_chunk!r}")
        if self.matmul == "onednn" and self.dtype != "bfloat16":
            raise ValueError(f"matmul='onednn' needs dtype bfloat16, got {self.dtype!r}")
        self._check_family()
        if self.lora is not None and not isinstance(self.lora, LoRAConfig):
            raise ValueError(f"lora must be a LoRAConfig or None, got {self.lora!r}")
        if self.lora is not None and not self.lora.enabled:
            set_("lora", None)  # rank 0: no adapters
        for name in ("bos_token_id", "pad_token_id"):
            value = _token_ids(getattr(self, name), name)
            if isinstance(value, tuple):
                raise ValueError(f"{name} must be a single id, got {value}")
            set_(name, value)
        set_("eos_token_id", _token_ids(self.eos_token_id, "eos_token_id"))
        for name in ("bos_token_id", "pad_token_id", "eos_token_id"):
            value = getattr(self, name)
            for token in (value if isinstance(value, tuple) else (value,)):
                if token is not None and not 0 <= token < self.vocab_size:
                    raise ValueError(f"{name} {token} is outside the vocabulary "
                                     f"[0, {self.vocab_size})")

    def _check_family(self):
        def need(condition: bool, what: str):
            if not condition:
                raise ValueError(f"family {self.family!r} requires {what}")

        if self.family == "qwen2":
            need(self.attention_bias, "attention_bias=True (q/k/v bias)")
            need(not self.attention_out_bias, "attention_out_bias=False")
            need(not self.qk_norm and not self.mlp_bias, "qk_norm=False and mlp_bias=False")
        else:
            need(self.attention_bias == self.attention_out_bias,
                 "attention_out_bias == attention_bias (one flag for q/k/v/o)")
        if self.family == "llama":
            need(not self.qk_norm, "qk_norm=False")
        if self.family == "qwen3":
            need(self.qk_norm, "qk_norm=True")
            need(not self.mlp_bias, "mlp_bias=False")

    # -- derived quantities -------------------------------------------------------------

    @property
    def compute_dtype(self) -> jnp.dtype:
        return jnp.dtype(self.dtype)

    @property
    def weight_dtype(self) -> jnp.dtype:
        return jnp.dtype(self.param_dtype)

    @property
    def unrolled_layers(self) -> bool:
        """Whether the cache-free forward loops over its layers in Python (layer_loop)."""
        if self.layer_loop == "auto":
            return self.num_layers <= UNROLL_LAYERS_UP_TO
        return self.layer_loop == "unroll"

    @property
    def num_groups(self) -> int:
        """Query heads per key/value head."""
        return self.num_heads // self.num_kv_heads

    def replace(self, **changes: Any) -> "ModelConfig":
        return dataclasses.replace(self, **changes)

    def num_params(self) -> int:
        """Parameter count (tied embeddings counted once)."""
        d, f, hd = self.hidden_size, self.intermediate_size, self.head_dim
        q, kv = self.num_heads * hd, self.num_kv_heads * hd
        attention = d * (q + 2 * kv) + q * d
        attention += (q + 2 * kv) * self.attention_bias + d * self.attention_out_bias
        attention += 2 * hd * self.qk_norm
        mlp = 3 * d * f + (2 * f + d) * self.mlp_bias
        per_layer = attention + mlp + 2 * d
        embeddings = self.vocab_size * d * (1 if self.tie_word_embeddings else 2)
        return self.num_layers * per_layer + embeddings + d

    # -- Hugging Face config.json -------------------------------------------------------

    @classmethod
    def from_hf_config(cls, hf: dict[str, Any], **overrides: Any) -> "ModelConfig":
        """Build from a transformers config.json dict (model_type llama | qwen2 | qwen3).

        Reads both the transformers 5 `rope_parameters` and the older top-level
        `rope_theta` + `rope_scaling`. `overrides` (e.g. dtype=...) replace fields.
        """
        model_type = hf.get("model_type")
        if model_type not in FAMILIES:
            raise ValueError(f"unsupported model_type {model_type!r}; supported: {FAMILIES}")
        if hf.get("hidden_act", "silu") != "silu":
            raise ValueError(f"only SwiGLU (hidden_act 'silu') is supported, "
                             f"got {hf['hidden_act']!r}")
        if hf.get("use_sliding_window", False):
            raise ValueError("sliding-window attention is not supported")
        rope = dict(hf.get("rope_parameters") or {})
        legacy = hf.get("rope_scaling") or {}
        rope = {**legacy, **rope}
        theta = rope.get("rope_theta", hf.get("rope_theta", 10000.0))
        rope_type = rope.get("rope_type", rope.get("type", "default"))
        if rope_type not in ("default", "llama3"):
            raise ValueError(f"unsupported rope_type {rope_type!r}; supported: default, llama3")
        if rope.get("partial_rotary_factor", 1.0) != 1.0:
            raise ValueError("partial rotary embeddings are not supported")
        if rope_type == "llama3":
            rope.setdefault("original_max_position_embeddings", hf.get("max_position_embeddings"))
        scaling = _rope_scaling_from_dict(rope) if rope_type == "llama3" else None
        num_heads = hf["num_attention_heads"]
        if model_type == "qwen2":
            qkv_bias, out_bias = True, False
        else:
            qkv_bias = out_bias = bool(hf.get("attention_bias", False))
        dtype = hf.get("dtype") or hf.get("torch_dtype") or "float32"
        fields = dict(
            vocab_size=hf["vocab_size"],
            hidden_size=hf["hidden_size"],
            intermediate_size=hf["intermediate_size"],
            num_layers=hf["num_hidden_layers"],
            num_heads=num_heads,
            num_kv_heads=hf.get("num_key_value_heads") or num_heads,
            head_dim=hf.get("head_dim") or hf["hidden_size"] // num_heads,
            rope_theta=theta,
            rope_scaling=scaling,
            rms_norm_eps=hf.get("rms_norm_eps", 1e-6),
            tie_word_embeddings=bool(hf.get("tie_word_embeddings", False)),
            attention_bias=qkv_bias,
            attention_out_bias=out_bias,
            mlp_bias=bool(hf.get("mlp_bias", False)) if model_type == "llama" else False,
            qk_norm=model_type == "qwen3",
            max_position_embeddings=hf.get("max_position_embeddings", 4096),
            dtype=dtype,
            param_dtype=dtype,
            family=model_type,
            bos_token_id=hf.get("bos_token_id"),
            eos_token_id=hf.get("eos_token_id"),
            pad_token_id=hf.get("pad_token_id"),
            initializer_range=hf.get("initializer_range", 0.02),
        )
        fields.update(overrides)
        return cls(**fields)

    def to_hf_config(self) -> dict[str, Any]:
        """A config.json dict that transformers loads into the matching *ForCausalLM.

        Rotary settings are written in the transformers 5 form (`rope_parameters`) and,
        for older readers, as top-level `rope_theta` / `rope_scaling`. The declared dtype
        is param_dtype, the dtype the weights are saved in.
        """
        rope_parameters: dict[str, Any] = {"rope_type": "default", "rope_theta": self.rope_theta}
        if self.rope_scaling is not None:
            rope_parameters = {**self.rope_scaling.to_hf(), "rope_theta": self.rope_theta}
        hf: dict[str, Any] = {
            "architectures": [_ARCHITECTURES[self.family]],
            "model_type": self.family,
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_layers,
            "num_attention_heads": self.num_heads,
            "num_key_value_heads": self.num_kv_heads,
            "head_dim": self.head_dim,
            "hidden_act": "silu",
            "max_position_embeddings": self.max_position_embeddings,
            "rms_norm_eps": self.rms_norm_eps,
            "rope_parameters": rope_parameters,
            "rope_theta": self.rope_theta,
            "rope_scaling": None if self.rope_scaling is None else self.rope_scaling.to_hf(),
            "tie_word_embeddings": self.tie_word_embeddings,
            "initializer_range": self.initializer_range,
            "attention_dropout": 0.0,
            "use_cache": True,
            "bos_token_id": self.bos_token_id,
            "eos_token_id": (list(self.eos_token_id) if isinstance(self.eos_token_id, tuple)
                             else self.eos_token_id),
            "pad_token_id": self.pad_token_id,
            "dtype": self.param_dtype,
            "torch_dtype": self.param_dtype,
        }
        if self.family != "qwen2":
            hf["attention_bias"] = self.attention_bias
        if self.family == "llama":
            hf["mlp_bias"] = self.mlp_bias
        else:
            hf["use_sliding_window"] = False
            hf["max_window_layers"] = self.num_layers
        return hf


def _rope_scaling_from_dict(rope: dict[str, Any]) -> Llama3RopeScaling:
    rope_type = rope.get("rope_type", rope.get("type", "llama3"))
    if rope_type != "llama3":
        raise ValueError(f"only llama3 rope scaling is supported, got {rope_type!r}")
    return Llama3RopeScaling(
        factor=float(rope["factor"]),
        low_freq_factor=float(rope["low_freq_factor"]),
        high_freq_factor=float(rope["high_freq_factor"]),
        original_max_position_embeddings=int(rope["original_max_position_embeddings"]),
    )
