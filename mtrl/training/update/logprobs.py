"""Per-token log-probabilities of rows under a policy, from one full forward: what the
losses compare with the sampler's old log-probabilities. The output projection runs in
chunks of positions (a real vocabulary's [tokens, V] logits would dominate memory)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from flax import nnx


# Positions whose [chunk, V] logits exist at once (chunked_logprobs): 512 x 49,152 float32
# logits are ~100 MB, where a whole packed step's [P·S, V] ran to gigabytes.
LOGITS_CHUNK = 512


def chunked_logprobs(logits_fn, hidden: jax.Array, targets: jax.Array,
                     chunk: int = LOGITS_CHUNK) -> jax.Array:
    """[N] float32 log-probabilities of `targets` under the logits of `hidden`:

        logp[n] = z_n[targets[n]] − logsumexp_v z_n[v],   z_n = logits_fn(hidden[n])

    hidden [N, D] (any float dtype: bf16 under mixed precision), targets int [N]. The
    logits are taken in float32 whatever logits_fn returns: the log-softmax of a bf16
    logit (ulp 2⁻⁴ at |z| ≈ 8) would put errors of hundredths of a nat into every
    importance ratio. The output projection runs `chunk` positions at a
    time and each chunk is rematerialised in the backward pass, so no [N, V] array
    (logits, softmax or their cotangents) is ever held: memory O(chunk·V), not O(N·V).
    """
    if hidden.ndim != 2 or targets.shape != hidden.shape[:1]:
        raise ValueError(f"hidden must be [N, D] and targets [N], got {hidden.shape}, "
                         f"{targets.shape}")
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    n = hidden.shape[0]
    chunk = min(chunk, max(n, 1))
    pad = -n % chunk
    h = jnp.pad(hidden, ((0, pad), (0, 0))).reshape(-1, chunk, hidden.shape[1])
    t = jnp.pad(targets, (0, pad)).reshape(-1, chunk)

    @jax.checkpoint
    def one_chunk(args):
        h_c, t_c = args
        z = logits_fn(h_c).astype(jnp.float32)
        picked = jnp.take_along_axis(z, t_c[:, None], axis=-1)[:, 0]
        return picked - jax.nn.logsumexp(z, axis=-1)

    return jax.lax.map(one_chunk, (h, t)).reshape(-1)[:n]


@functools.partial(jax.jit, static_argnums=0, static_argnames=("remat", "chunk"))
def sequence_logprobs(graphdef: nnx.GraphDef, params: nnx.State, tokens: jax.Array,
                      token_mask: jax.Array, remat: str = "none",
                      chunk: int = LOGITS_CHUNK) -> jax.Array:
    """[B, L] float32: log π(tokens[i] | tokens[:i]) at position i, from one full forward.

        logp[b, i] = z[b, i−1, tokens[b, i]] − logsumexp_v z[b, i−1, v]

    with z the float32 logits (temperature 1, no filters: the sampler's `logprobs`),
    computed `chunk` positions at a time (chunked_logprobs). The layout of
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
    logp = chunked_logprobs(model.logits, hidden[:, :-1].reshape(b * (length - 1), -1),
                            tokens[:, 1:].reshape(-1), chunk).reshape(b, length - 1)
    predicted = token_mask[:, 1:] & token_mask[:, :-1]
    logp = jnp.where(predicted, logp, 0.0)
    return jnp.pad(logp, ((0, 0), (1, 0)))


def predicted_mask(token_mask: jax.Array) -> jax.Array:
    """[B, L] bool: positions whose token and predecessor are real (sequence_logprobs
    defines a log-probability there)."""
    previous = jnp.pad(token_mask[:, :-1], ((0, 0), (1, 0)))
    return token_mask & previous
