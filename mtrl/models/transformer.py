"""Decoder-only transformer (Llama 3 / Qwen2 / Qwen3) in Flax NNX.

Parameter layout (nnx.state(model) paths; layers are stacked on a leading axis of size
num_layers. The cache-free forward (training) runs them with one `jax.lax.scan`, so its
compile time does not grow with depth, or, for shallow models, in a Python loop over
static slices (ModelConfig.layer_loop); the cached forward (sampling) unrolls them, see
`unstacked_layers`):

  embed_tokens.embedding                      [V, D]
  layers.input_layernorm.weight               [layers, D]
  layers.self_attn.{q,k,v}_proj.kernel        [layers, D, heads*head_dim]  (+ .bias if any)
  layers.self_attn.o_proj.kernel              [layers, heads*head_dim, D]
  layers.self_attn.{q,k}_norm.weight          [layers, head_dim]           (qk_norm only)
  layers.post_attention_layernorm.weight      [layers, D]
  layers.mlp.{gate,up}_proj.kernel            [layers, D, F]
  layers.mlp.down_proj.kernel                 [layers, F, D]
  norm.weight                                 [D]
  lm_head.kernel                              [D, V]   (absent when embeddings are tied)

The model is pure: `__call__` reads parameters only and returns the new cache, so
`nnx.merge(graphdef, state)(...)` works under jax.jit and under jax.vmap over a state
stacked on a leading (agent) axis.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from flax import nnx

from mtrl.models.config import ModelConfig
from mtrl.models.head import token_logprobs
from mtrl.models.kv_cache import KVCache
from mtrl.models.layers import DecoderBlock, RMSNorm
from mtrl.models.matmul import bf16_matmul, bf16_matmul_transposed, resolve_matmul
from mtrl.models.remat import check_remat, remat_layer
from mtrl.models.rope import inverse_frequencies, rotary_cos_sin


def init_cache(config: ModelConfig, batch: int, max_len: int, dtype=None) -> KVCache:
    """An empty KVCache for `batch` rows and `max_len` slots (dtype: config.dtype)."""
    if batch <= 0 or max_len <= 0:
        raise ValueError(f"batch and max_len must be > 0, got {batch}, {max_len}")
    return KVCache.init(num_layers=config.num_layers, batch=batch, max_len=max_len,
                        num_kv_heads=config.num_kv_heads, head_dim=config.head_dim,
                        dtype=config.compute_dtype if dtype is None else dtype)


def default_positions(token_mask: jax.Array, offset: jax.Array | int = 0) -> jax.Array:
    """int32 [B, L] rotary positions: offset + the number of real tokens before each token.

    A real token's position is its 0-based index among its row's real tokens (plus the
    real tokens already in the cache, `offset` [B, 1]); padding gets the position the
    next real token will have (it is never attended, so only finiteness matters).
    """
    if token_mask.ndim != 2:
        raise ValueError(f"token_mask must be [B, L], got shape {token_mask.shape}")
    mask = token_mask.astype(jnp.int32)
    return (jnp.cumsum(mask, axis=1) - mask + offset).astype(jnp.int32)


class Transformer(nnx.Module):
    """Decoder-only language model; see the module docstring for the parameter layout."""

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        self.config = config
        self.embed_tokens = nnx.Embed(
            config.vocab_size, config.hidden_size, dtype=config.compute_dtype,
            param_dtype=config.weight_dtype,
            embedding_init=nnx.initializers.normal(config.initializer_range), rngs=rngs)
        self.layers = _stacked_blocks(config, rngs.params())
        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps,
                            param_dtype=config.weight_dtype)
        if config.tie_word_embeddings:
            self.lm_head = None
        else:
            self.lm_head = nnx.Linear(
                config.hidden_size, config.vocab_size, use_bias=False,
                dtype=config.compute_dtype, param_dtype=config.weight_dtype,
                kernel_init=nnx.initializers.normal(config.initializer_range), rngs=rngs)

    def __call__(self, tokens: jax.Array, *, positions: jax.Array | None = None,
                 token_mask: jax.Array | None = None, cache: KVCache | None = None,
                 attend_end: jax.Array | None = None, remat: str = "none"):
        """Logits for a batch of token rows, optionally extending a KV cache.

        tokens int32 [B, L]. token_mask bool [B, L] (default all True): False marks
        padding, which neither attends nor is attended to, anywhere in a row. positions
        int32 [B, L] (default `default_positions`: the count of real tokens before the
        token in its row, including those already in the cache).

        cache None: returns logits float32 [B, L, V], causal attention among real tokens.
        cache KVCache: writes the L tokens' keys/values at slots [index, index + L)
        (padding written but marked invalid); the query at slot s attends to key slots
        s' <= s with valid[s']. Returns (logits, new_cache), index advanced by L. The
        caller keeps index + L <= cache.max_len (not checkable inside jit: an overflow
        would clamp the write).

        attend_end int32 [B, L] (cache None only): a tree (or packed rows) laid out in
        depth-first order; query i attends key j iff j <= i < attend_end[j], i.e. j is
        i or an ancestor of i (attend_end[j] ends j's subtree). Packed rows are chains:
        attend_end = the end of the row's segment. Pass positions = depth with it.
        remat: activation rematerialisation of each decoder layer, "none" | "full" |
        "dots" (mtrl.models.remat), cache None only.
        """
        logits, new_cache = self._checked_forward(tokens, positions, token_mask, cache,
                                                  attend_end, remat, want_logits=True)
        return logits if cache is None else (logits, new_cache)

    def hidden_states(self, tokens: jax.Array, *, positions: jax.Array | None = None,
                      token_mask: jax.Array | None = None, cache: KVCache | None = None,
                      attend_end: jax.Array | None = None, remat: str = "none"
                      ) -> tuple[jax.Array, KVCache | None]:
        """Final-norm hidden states [B, L, D] (compute dtype) and the new cache (or None);
        same arguments as __call__. `logits(hidden)` finishes the forward pass, or
        `token_logprobs(hidden, targets)` for the log-probabilities of given tokens
        without holding every position's logits (what training does)."""
        return self._checked_forward(tokens, positions, token_mask, cache, attend_end, remat,
                                     want_logits=False)

    def _checked_forward(self, tokens, positions, token_mask, cache, attend_end, remat, *,
                         want_logits: bool):
        """Checks every input (one-line ValueErrors), then runs the jitted forward."""
        tokens, positions, token_mask = self._check_inputs(tokens, positions, token_mask, cache)
        if cache is not None and (attend_end is not None or remat != "none"):
            raise ValueError("attend_end and remat apply to the cache-free forward only")
        if attend_end is not None and attend_end.shape != tokens.shape:
            raise ValueError(f"attend_end shape {attend_end.shape} != tokens {tokens.shape}")
        check_remat(remat)
        graph, state = nnx.split(self)
        return _jitted_forward(graph, state, tokens, positions, token_mask, cache, attend_end,
                               want_logits=want_logits, remat=remat)

    def _check_inputs(self, tokens, positions, token_mask, cache):
        config = self.config
        if tokens.ndim != 2:
            raise ValueError(f"tokens must be [B, L], got shape {tokens.shape}")
        if not jnp.issubdtype(tokens.dtype, jnp.integer):
            raise ValueError(f"tokens must be integers, got {tokens.dtype}")
        batch, length = tokens.shape
        if token_mask is None:
            token_mask = jnp.ones((batch, length), bool)
        if token_mask.shape != tokens.shape:
            raise ValueError(f"token_mask shape {token_mask.shape} != tokens {tokens.shape}")
        token_mask = token_mask.astype(bool)
        if cache is not None:
            if cache.batch != batch:
                raise ValueError(f"cache batch {cache.batch} != tokens batch {batch}")
            if length > cache.max_len:
                raise ValueError(f"{length} tokens do not fit a cache of {cache.max_len} slots")
            expected = (config.num_layers, batch, config.num_kv_heads, cache.max_len,
                        config.head_dim)
            if cache.k.shape != expected or cache.v.shape != expected:
                raise ValueError(f"cache k/v shapes {cache.k.shape}, {cache.v.shape} != {expected}")
        if positions is not None and positions.shape != tokens.shape:
            raise ValueError(f"positions shape {positions.shape} != tokens {tokens.shape}")
        return tokens, positions, token_mask

    def _forward(self, tokens: jax.Array, positions: jax.Array | None, token_mask: jax.Array,
                 cache: KVCache | None, attend_end: jax.Array | None = None,
                 remat: str = "none") -> tuple[jax.Array, KVCache | None]:
        """hidden_states after validation (traced inside _jitted_forward)."""
        config = self.config
        length = tokens.shape[1]
        if positions is None:
            offset = 0 if cache is None else cache.num_tokens()[:, None]
            positions = default_positions(token_mask, offset)
        dtype = config.compute_dtype
        inv_freq = inverse_frequencies(config.head_dim, config.rope_theta, config.rope_scaling)
        cos, sin = rotary_cos_sin(positions, inv_freq, dtype)
        h = self.embed_tokens(tokens).astype(dtype)
        if cache is None:
            block_graph, block_state = nnx.split(self.layers)
            # Query i attends key j iff j <= i < attend_end[j], both real; the layers
            # get these O(L) factors, not the [B, L, L] mask (attention.cache_free_mask).

            def layer(h, params):
                return nnx.merge(block_graph, params)(h, cos, sin, token_mask, attend_end), None

            body = remat_layer(layer, remat)
            if config.unrolled_layers:  # static slices: no stacked residuals (layer_loop)
                for i in range(config.num_layers):
                    h, _ = body(h, jax.tree.map(lambda x, i=i: x[i], block_state))
            else:
                h, _ = jax.lax.scan(body, h, block_state)
            return self.norm(h), None

        k_layers, v_layers = cache.unstack()
        h, k_layers, v_layers, valid = self._cached_layers(
            h, cos, sin, token_mask, self.unstacked_layers(), k_layers, v_layers,
            cache.valid, cache.index)
        new_cache = KVCache.stack(k_layers, v_layers, valid, cache.index + length)
        return self.norm(h), new_cache

    def unstacked_layers(self) -> list[DecoderBlock]:
        """The stacked blocks as num_layers modules (static slices of the parameters).

        The cached forward runs these in an unrolled Python loop: inside a decode loop
        a scan over stacked layers would copy every layer's weights and cache slice out
        of the stacked arrays on every step (XLA materialises the dynamic slices that
        feed its dots), while static per-layer slices taken before the loop are free.
        Compile time of the cached forward therefore grows with depth.
        """
        graph, state = nnx.split(self.layers)
        return [nnx.merge(graph, jax.tree.map(lambda x, i=i: x[i], state))
                for i in range(self.config.num_layers)]

    def forward_layer_caches(self, tokens: jax.Array, positions: jax.Array,
                             token_mask: jax.Array, layers: list[DecoderBlock],
                             k_layers: tuple[jax.Array, ...], v_layers: tuple[jax.Array, ...],
                             valid: jax.Array, index: jax.Array):
        """The cached forward over an unstacked cache (`KVCache.unstack`), for decode loops.

        Same semantics as `__call__` with cache=KVCache.stack(k_layers, v_layers, valid,
        index) (tokens, positions int32 [B, L], token_mask bool [B, L]; layers from
        `unstacked_layers()`), but the per-layer caches stay separate buffers that a
        while_loop carries and updates in place. Returns (logits float32 [B, L, V],
        k_layers, v_layers, valid); the write index advances by L (the caller's to track).
        """
        if tokens.ndim != 2 or positions.shape != tokens.shape or token_mask.shape != tokens.shape:
            raise ValueError(f"tokens, positions, token_mask must be [B, L], got {tokens.shape}, "
                             f"{positions.shape}, {token_mask.shape}")
        if len(layers) != len(k_layers) or len(k_layers) != len(v_layers):
            raise ValueError(f"need one cache per layer: {len(layers)} layers, "
                             f"{len(k_layers)} k, {len(v_layers)} v")
        dtype = self.config.compute_dtype
        inv_freq = inverse_frequencies(self.config.head_dim, self.config.rope_theta,
                                       self.config.rope_scaling)
        cos, sin = rotary_cos_sin(positions, inv_freq, dtype)
        h = self.embed_tokens(tokens).astype(dtype)
        h, k_layers, v_layers, valid = self._cached_layers(
            h, cos, sin, token_mask.astype(bool), layers, k_layers, v_layers, valid, index)
        return self.logits(self.norm(h)), k_layers, v_layers, valid

    @staticmethod
    def _cached_layers(h, cos, sin, token_mask, layers, k_layers, v_layers, valid, index):
        # The new tokens occupy slots [index, index + L); the query at slot s sees valid
        # slots s' <= s (slots past the write index are never valid).
        length = h.shape[1]
        valid = jax.lax.dynamic_update_slice(valid, token_mask, (0, index))
        slots = jnp.arange(valid.shape[1])
        query_slots = index + jnp.arange(length)
        mask = (valid[:, None, :] & (slots[None, None, :] <= query_slots[None, :, None])
                & token_mask[:, :, None])
        k_out, v_out = [], []
        for block, k_cache, v_cache in zip(layers, k_layers, v_layers):
            h, k_cache, v_cache = block.with_cache(h, cos, sin, mask, k_cache, v_cache, index)
            k_out.append(k_cache)
            v_out.append(v_cache)
        return h, tuple(k_out), tuple(v_out), valid

    def logits(self, hidden: jax.Array) -> jax.Array:
        """float32 [..., V] logits from final hidden states; the product accumulates in
        float32 whatever the compute dtype (the log-probabilities RL trains on), on
        XLA or oneDNN per ModelConfig.matmul (mtrl.models.matmul)."""
        if hidden.shape[-1] != self.config.hidden_size:
            raise ValueError(f"hidden size {hidden.shape[-1]} != {self.config.hidden_size}")
        if resolve_matmul(self.config.matmul, self.config.compute_dtype) == "onednn":
            if self.lm_head is None:
                return bf16_matmul_transposed(hidden, self.embed_tokens.embedding[...])
            return bf16_matmul(hidden, self.lm_head.kernel[...])
        if self.lm_head is None:
            table = self.embed_tokens.embedding[...].astype(hidden.dtype)
            return jnp.einsum("...d,vd->...v", hidden, table, preferred_element_type=jnp.float32)
        kernel = self.lm_head.kernel[...].astype(hidden.dtype)
        return jnp.einsum("...d,dv->...v", hidden, kernel, preferred_element_type=jnp.float32)

    def token_logprobs(self, hidden: jax.Array, targets: jax.Array,
                       chunk: int | None = None) -> jax.Array:
        """[N] float32 log π(targets[n] | hidden[n]) from final hidden states [N, D]:
        the `logits` head projected `chunk` tokens at a time (default
        config.logits_chunk; 0: all at once), never all N tokens' logits
        (mtrl.models.head.token_logprobs)."""
        return token_logprobs(self.logits, hidden, targets,
                              self.config.logits_chunk if chunk is None else chunk)


def _forward(graph: nnx.GraphDef, state: nnx.State, tokens, positions, token_mask, cache,
             attend_end, *, want_logits: bool, remat: str = "none"):
    model = nnx.merge(graph, state)
    hidden, new_cache = model._forward(tokens, positions, token_mask, cache, attend_end, remat)
    return (model.logits(hidden) if want_logits else hidden), new_cache


# One compiled program per shape, so eager calls are fast too; inside a caller's jit or
# vmap this nested jit is simply inlined.
_jitted_forward = jax.jit(_forward, static_argnums=0, static_argnames=("want_logits", "remat"))


def _stacked_blocks(config: ModelConfig, key: jax.Array) -> DecoderBlock:
    """num_layers independently initialised blocks whose parameters are stacked on a
    leading axis (one module; scanned in Transformer._forward)."""
    graph = nnx.graphdef(nnx.eval_shape(lambda: DecoderBlock(config, rngs=nnx.Rngs(0))))
    return nnx.merge(graph, _init_block_states(config, jax.random.split(key, config.num_layers)))


@functools.partial(jax.jit, static_argnums=0)
def _init_block_states(config: ModelConfig, keys: jax.Array) -> nnx.State:
    # Module-level and keyed on the (hashable) config: models of one config share a
    # single compiled initialiser.
    def init_one(layer_key):
        return nnx.state(DecoderBlock(config, rngs=nnx.Rngs(params=layer_key)))

    return jax.vmap(init_one)(keys)
