"""Per-token log-probabilities of rows under a policy, from one full forward: what the
losses compare with the sampler's old log-probabilities. The output projection runs in
chunks of positions (ModelConfig.logits_chunk, mtrl/models/head.py: a real vocabulary's
[tokens, V] logits would dominate memory)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from flax import nnx


@functools.partial(jax.jit, static_argnums=0, static_argnames=("remat", "chunk"))
def sequence_logprobs(graphdef: nnx.GraphDef, params: nnx.State, tokens: jax.Array,
                      token_mask: jax.Array, remat: str = "none",
                      chunk: int | None = None) -> jax.Array:
    """[B, L] float32: log π(tokens[i] | tokens[:i]) at position i, from one full forward.

        logp[b, i] = z[b, i−1, tokens[b, i]] − logsumexp_v z[b, i−1, v]

    with z the float32 logits (temperature 1, no filters: the sampler's `logprobs`),
    computed `chunk` positions at a time (default: the model's config.logits_chunk; 0:
    all at once; Transformer.token_logprobs). The layout of
    RolloutBatch.old_logprobs. Entries are 0 where the token or its predecessor is
    padding (position 0 included): rows must hold their real tokens contiguously (right
    or left padding), as rollout rows do. Jitted (graphdef static), so eager calls
    compile once per shape; inside another jit it is inlined.
    """
    if jnp.ndim(tokens) != 2:
        raise ValueError(f"tokens must be [B, L], got shape {jnp.shape(tokens)}")
    if jnp.shape(token_mask) != jnp.shape(tokens):
        raise ValueError(f"token_mask shape {jnp.shape(token_mask)} != tokens {jnp.shape(tokens)}")
    if not jnp.issubdtype(tokens.dtype, jnp.integer):
        raise ValueError(f"tokens must be integers, got {tokens.dtype}")
    if tokens.shape[1] < 2:
        raise ValueError(f"need L >= 2 positions to predict a token, got L = {tokens.shape[1]}")
    token_mask = token_mask.astype(bool)
    model = nnx.merge(graphdef, params)
    hidden, _ = model.hidden_states(tokens, token_mask=token_mask, remat=remat)
    b, length = tokens.shape
    logp = model.token_logprobs(hidden[:, :-1].reshape(b * (length - 1), -1),
                                tokens[:, 1:].reshape(-1), chunk).reshape(b, length - 1)
    predicted = token_mask[:, 1:] & token_mask[:, :-1]
    logp = jnp.where(predicted, logp, 0.0)
    return jnp.pad(logp, ((0, 0), (1, 0)))


def predicted_mask(token_mask: jax.Array) -> jax.Array:
    """[B, L] bool: positions whose token and predecessor are real (sequence_logprobs
    defines a log-probability there)."""
    previous = jnp.pad(token_mask[:, :-1], ((0, 0), (1, 0)))
    return token_mask & previous
