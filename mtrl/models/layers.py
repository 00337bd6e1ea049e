"""Building blocks of the decoder: RMSNorm, grouped-query attention, SwiGLU MLP.

Parameter names follow Hugging Face (q_proj, input_layernorm, ...) so that checkpoint
conversion is a rename plus a transpose; kernels are [in, out] (flax convention).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from mtrl.models.attention import (MASK_VALUE, cache_free_mask, chunked_attention,  # noqa: F401
                                   fused_attention, grouped_attention,
                                   resolve_implementation)
from mtrl.models.cached_attention import cached_attention
from mtrl.models.config import ModelConfig
from mtrl.models.dense import Dense
from mtrl.models.lora import adapter_targets
from mtrl.models.lora_linear import LoRALinear
from mtrl.models.rope import apply_rotary

class RMSNorm(nnx.Module):
    """Root-mean-square norm (Zhang & Sennrich 2019), Hugging Face Llama/Qwen numerics.

      y = weight * (x / sqrt(mean(x^2) + eps))

    The normalisation runs in float32; the result is cast back to x's dtype before the
    weight multiplies it (LlamaRMSNorm does the same). eps is added inside the sqrt.
    """

    def __init__(self, dim: int, *, eps: float, param_dtype: jnp.dtype):
        self.eps = eps
        self.weight = nnx.Param(jnp.ones((dim,), param_dtype))

    def __call__(self, x: jax.Array) -> jax.Array:
        if x.shape[-1] != self.weight.shape[0]:
            raise ValueError(f"last axis {x.shape[-1]} != norm size {self.weight.shape[0]}")
        x32 = x.astype(jnp.float32)
        normed = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + self.eps)
        return self.weight[...].astype(x.dtype) * normed.astype(x.dtype)


def _linear(config: ModelConfig, in_dim: int, out_dim: int, bias: bool,
            rngs: nnx.Rngs, name: str) -> Dense:
    """The projection `name` (q_proj, ..., down_proj): a LoRALinear where config.lora
    targets it (lora_linear.py), else Dense; both multiply where config.matmul says."""
    kwargs = dict(use_bias=bias, dtype=config.compute_dtype, param_dtype=config.weight_dtype,
                  kernel_init=nnx.initializers.normal(config.initializer_range),
                  bias_init=nnx.initializers.zeros_init(), rngs=rngs, matmul=config.matmul)
    if adapter_targets(config, name):
        return LoRALinear(in_dim, out_dim, lora=config.lora, **kwargs)
    return Dense(in_dim, out_dim, **kwargs)


class Attention(nnx.Module):
    """Grouped-query self-attention with rotary embeddings, optional q/k/v bias (Qwen2)
    and per-head q/k RMSNorm before the rotation (Qwen3)."""

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        d, hd = config.hidden_size, config.head_dim
        self.num_heads, self.num_kv_heads, self.head_dim = config.num_heads, config.num_kv_heads, hd
        self.q_proj = _linear(config, d, config.num_heads * hd, config.attention_bias, rngs,
                              "q_proj")
        self.k_proj = _linear(config, d, config.num_kv_heads * hd, config.attention_bias, rngs,
                              "k_proj")
        self.v_proj = _linear(config, d, config.num_kv_heads * hd, config.attention_bias, rngs,
                              "v_proj")
        self.o_proj = _linear(config, config.num_heads * hd, d, config.attention_out_bias, rngs,
                              "o_proj")
        if config.qk_norm:
            self.q_norm = RMSNorm(hd, eps=config.rms_norm_eps, param_dtype=config.weight_dtype)
            self.k_norm = RMSNorm(hd, eps=config.rms_norm_eps, param_dtype=config.weight_dtype)
        else:
            self.q_norm = self.k_norm = None

    def project(self, x: jax.Array, cos: jax.Array, sin: jax.Array
                ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """x [B, L, hidden] -> rotated q [B, L, KV, G, D], rotated k and v [B, KV, L, D]
        (head-first, the KVCache layout)."""
        b, l, _ = x.shape
        q = self.q_proj(x).reshape(b, l, self.num_heads, self.head_dim)
        k = self.k_proj(x).reshape(b, l, self.num_kv_heads, self.head_dim)
        v = self.v_proj(x).reshape(b, l, self.num_kv_heads, self.head_dim)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        # Query head h uses kv head h // G (transformers' repeat_kv order).
        q = q.reshape(b, l, self.num_kv_heads, self.num_heads // self.num_kv_heads, self.head_dim)
        return q, k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)

    def output(self, attended: jax.Array) -> jax.Array:
        """attended [B, L, KV, G, D] -> [B, L, hidden]."""
        b, l = attended.shape[:2]
        return self.o_proj(attended.reshape(b, l, self.num_heads * self.head_dim))


class MLP(nnx.Module):
    """SwiGLU feed-forward (Shazeer 2020): down(silu(gate(x)) * up(x))."""

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        d, f = config.hidden_size, config.intermediate_size
        self.gate_proj = _linear(config, d, f, config.mlp_bias, rngs, "gate_proj")
        self.up_proj = _linear(config, d, f, config.mlp_bias, rngs, "up_proj")
        self.down_proj = _linear(config, f, d, config.mlp_bias, rngs, "down_proj")

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.down_proj(jax.nn.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderBlock(nnx.Module):
    """Pre-norm residual block: x + attn(norm(x)), then + mlp(norm(.))."""

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        eps, pdt = config.rms_norm_eps, config.weight_dtype
        self.input_layernorm = RMSNorm(config.hidden_size, eps=eps, param_dtype=pdt)
        self.self_attn = Attention(config, rngs=rngs)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, eps=eps, param_dtype=pdt)
        self.mlp = MLP(config, rngs=rngs)
        self.attention = config.attention
        self.decode_attention = config.decode_attention

    def __call__(self, x: jax.Array, cos: jax.Array, sin: jax.Array, token_mask: jax.Array,
                 attend_end: jax.Array | None) -> jax.Array:
        """One layer without a cache: x [B, L, hidden]; the mask is given by its factors
        token_mask bool [B, L] and attend_end int32 [B, L] or None (query i attends key
        j iff j <= i < attend_end[j], both real: attention.cache_free_mask) -> [B, L,
        hidden]. Attention per ModelConfig.attention, chosen when traced
        (mtrl/models/attention.py); only the chunked path avoids a [B, L, L] mask."""
        q, k, v = self.self_attn.project(self.input_layernorm(x), cos, sin)
        implementation = resolve_implementation(self.attention, q.dtype, q.shape[-1])
        if implementation == "chunked":
            return self._finish(x, chunked_attention(q, k, v, token_mask, attend_end))
        mask = cache_free_mask(token_mask, attend_end)
        if implementation == "reference":
            return self._finish(x, grouped_attention(q, [(k, v, mask)]))
        return self._finish(x, fused_attention(q, k, v, mask, implementation))

    def with_cache(self, x: jax.Array, cos: jax.Array, sin: jax.Array, mask: jax.Array,
                   k_cache: jax.Array, v_cache: jax.Array, index: jax.Array
                   ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """One layer that first writes its new keys/values into its own cache.

        k_cache, v_cache [B, KV, S, D] (this layer's slice of the KVCache): the L new
        tokens' k, v go to slots [index, index + L) with one dynamic_update_slice each
        (in place when the cache is a loop carry), then the queries attend over all S
        slots under mask [B, L, S] (which already admits the new slots causally), so the
        cache and the new tokens are one block: no concatenation, no copy of the cache.
        A one-token step attends per ModelConfig.decode_attention (cached_attention.py).
        Returns (x [B, L, hidden], k_cache, v_cache).
        """
        q, k, v = self.self_attn.project(self.input_layernorm(x), cos, sin)
        start = (0, 0, index, 0)
        k_cache = jax.lax.dynamic_update_slice(k_cache, k.astype(k_cache.dtype), start)
        v_cache = jax.lax.dynamic_update_slice(v_cache, v.astype(v_cache.dtype), start)
        attended = cached_attention(q, k_cache, v_cache, mask, index, self.decode_attention)
        return self._finish(x, attended), k_cache, v_cache

    def _finish(self, x: jax.Array, attended: jax.Array) -> jax.Array:
        x = x + self.self_attn.output(attended)
        return x + self.mlp(self.post_attention_layernorm(x))
