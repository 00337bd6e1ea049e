"""Decode: autoregressive sampling with a preallocated KV cache in one `lax.while_loop`.

Each loop step, for every row b that is still running:

  1. draw y ~ q(. | z_b), z_b the row's current next-token logits (filters.sample_tokens);
     record log softmax(z_b)[y] (the policy, temperature 1) and log q(y) (the sampler);
  2. the row ends if y is one of its stop tokens or it has produced its budget;
  3. feed y through the model at the shared cache index (rotary position = the row's
     real-token count), which writes its key/value and yields the next logits.

Rows that already ended write a pad token marked invalid in step 3, so afterwards the
cache holds exactly prompt + generated tokens per row (stop token included) and can be
extended for the next turn. The loop exits as soon as every row has ended, or after
T = config.max_new_tokens steps; the write index advances by the number of steps taken.
Randomness: step t uses fold_in(key, t), and row b within it fold_in(., b).
"""

from __future__ import annotations

import flax.struct
import jax
import jax.numpy as jnp
from flax import nnx

from mtrl.models.kv_cache import KVCache
from mtrl.sampling.config import SamplingConfig
from mtrl.sampling.filters import sample_tokens, token_log_probs
from mtrl.sampling.output import SampleOutput


@flax.struct.dataclass
class DecodeState:
    """Loop carry of `decode`."""

    step: jax.Array  # [] int32, tokens drawn so far (= output column to write next)
    # The cache, unstacked (KVCache.unstack) so that each layer's keys/values are their
    # own loop-carried buffer, updated in place and read by attention without a copy.
    k_layers: tuple[jax.Array, ...]  # per layer [B, kv_heads, S, head_dim]
    v_layers: tuple[jax.Array, ...]  # per layer [B, kv_heads, S, head_dim]
    valid: jax.Array  # [B, S] bool
    index: jax.Array  # [] int32, next slot; advances 1 per step
    logits: jax.Array  # [B, V] float32, next-token logits per row (stale once ended)
    positions: jax.Array  # [B] int32, real tokens held per row (next rotary position)
    tokens: jax.Array  # [B, T] int32
    logprobs: jax.Array  # [B, T] float32
    sample_logprobs: jax.Array  # [B, T] float32
    lengths: jax.Array  # [B] int32
    done: jax.Array  # [B] bool
    stopped: jax.Array  # [B] bool, ended on a stop token


def stop_token_table(config: SamplingConfig, stop_tokens: jax.Array | None,
                     batch: int) -> jax.Array:
    """[B, K] int32 stop ids per row: the per-row ids (-1 = none) plus config.stop_token_ids."""
    shared = jnp.broadcast_to(jnp.asarray(config.stop_token_ids or (-1,), jnp.int32),
                              (batch, max(1, len(config.stop_token_ids))))
    if stop_tokens is None:
        return shared
    if stop_tokens.ndim != 2 or stop_tokens.shape[0] != batch:
        raise ValueError(f"stop_tokens must be [B={batch}, K], got shape {stop_tokens.shape}")
    return jnp.concatenate([stop_tokens.astype(jnp.int32), shared], axis=1)


def decode(graphdef: nnx.GraphDef, state: nnx.State, cache: KVCache, last_logits: jax.Array,
           key: jax.Array, config: SamplingConfig, max_new_tokens: jax.Array,
           stop_tokens: jax.Array | None = None) -> tuple[SampleOutput, KVCache]:
    """Sample up to T = config.max_new_tokens tokens per row from a prefilled cache.

    Args:
      graphdef, state: a split NNX model (`nnx.split(model)`); jit with graphdef and
        config static. `jax.vmap` over (state, cache, last_logits, key, max_new_tokens,
        stop_tokens) runs stacked agents' parameters in one call.
      cache: rows as left by `prefill`; needs cache.index + T <= cache.max_len.
      last_logits: [B, V] logits for each row's first new token (from `prefill`).
      key: one PRNG key for the whole call.
      max_new_tokens: [B] int32 per-row budgets, clipped to T; <= 0 means the row does
        not run (bucket padding).
      stop_tokens: optional [B, K] int32 per-row stop ids, padded with -1; combined with
        config.stop_token_ids.

    Returns (SampleOutput [B, T], cache); see `SampleOutput` for which distribution each
    log-probability is under.
    """
    if last_logits.ndim != 2:
        raise ValueError(f"last_logits must be [B, V], got shape {last_logits.shape}")
    batch = last_logits.shape[0]
    if cache.batch != batch:
        raise ValueError(f"cache batch {cache.batch} != last_logits batch {batch}")
    if max_new_tokens.shape != (batch,):
        raise ValueError(f"max_new_tokens must be [B={batch}], got {max_new_tokens.shape}")
    horizon = config.max_new_tokens
    if horizon > cache.max_len:
        raise ValueError(f"max_new_tokens {horizon} exceeds the cache length {cache.max_len}")
    stops = stop_token_table(config, stop_tokens, batch)
    budget = jnp.minimum(max_new_tokens.astype(jnp.int32), horizon)
    model = nnx.merge(graphdef, state)
    # Per-layer parameter slices taken once, outside the loop (see unstacked_layers).
    layers = model.unstacked_layers()

    def keep_going(s: DecodeState) -> jax.Array:
        return (s.step < horizon) & ~jnp.all(s.done)

    def one_step(s: DecodeState) -> DecodeState:
        running = ~s.done
        drawn, drawn_sample_lp = sample_tokens(jax.random.fold_in(key, s.step), s.logits, config)
        drawn_lp = token_log_probs(s.logits, drawn)
        token = jnp.where(running, drawn, config.pad_id)
        column = lambda buf, x: jax.lax.dynamic_update_slice_in_dim(buf, x[:, None], s.step, 1)
        lengths = s.lengths + running.astype(jnp.int32)
        hit_stop = running & jnp.any(token[:, None] == stops, axis=1)
        logits, k_layers, v_layers, valid = model.forward_layer_caches(
            token[:, None], s.positions[:, None], running[:, None], layers, s.k_layers,
            s.v_layers, s.valid, s.index)
        # Greedy sample log-probs are all 0 (a point mass): skip the per-step write.
        sample_logprobs = (s.sample_logprobs if config.greedy else
                           column(s.sample_logprobs, jnp.where(running, drawn_sample_lp, 0.0)))
        return DecodeState(
            step=s.step + 1,
            k_layers=k_layers,
            v_layers=v_layers,
            valid=valid,
            index=s.index + 1,
            # Ended rows' logits go stale: they only ever draw tokens that are discarded.
            logits=logits[:, -1].astype(jnp.float32),
            positions=s.positions + running.astype(jnp.int32),
            tokens=column(s.tokens, token),
            logprobs=column(s.logprobs, jnp.where(running, drawn_lp, 0.0)),
            sample_logprobs=sample_logprobs,
            lengths=lengths,
            done=s.done | hit_stop | (lengths >= budget),
            stopped=s.stopped | hit_stop,
        )

    k_layers, v_layers = cache.unstack()
    init = DecodeState(
        step=jnp.zeros((), jnp.int32),
        k_layers=k_layers,
        v_layers=v_layers,
        valid=cache.valid,
        index=cache.index,
        logits=last_logits.astype(jnp.float32),
        positions=cache.num_tokens(),
        tokens=jnp.full((batch, horizon), config.pad_id, jnp.int32),
        logprobs=jnp.zeros((batch, horizon), jnp.float32),
        sample_logprobs=jnp.zeros((batch, horizon), jnp.float32),
        lengths=jnp.zeros((batch,), jnp.int32),
        done=budget <= 0,
        stopped=jnp.zeros((batch,), bool),
    )
    final = jax.lax.while_loop(keep_going, one_step, init)
    output = SampleOutput(
        tokens=final.tokens,
        logprobs=final.logprobs,
        sample_logprobs=final.sample_logprobs,
        lengths=final.lengths,
        finished_by_stop=final.stopped,
    )
    return output, KVCache.stack(final.k_layers, final.v_layers, final.valid, final.index)
