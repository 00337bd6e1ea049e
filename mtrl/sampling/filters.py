"""Pure logit filters (temperature, top-k, top-p) and the token draw.

All functions act on the last axis (the vocabulary, size V) and broadcast over any
leading axes. Removed tokens get the logit -inf, so `jax.nn.log_softmax` of a filtered
row is the log-probability of the renormalised distribution over the kept tokens, and
the draw (mtrl.sampling.draw: inverse transform sampling, one uniform per row) never
picks them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from mtrl.sampling.config import SamplingConfig
from mtrl.sampling.draw import inverse_cdf_index

NEG_INF = -jnp.inf


def _check_logits(logits: jax.Array, name: str = "logits") -> None:
    if logits.ndim < 1:
        raise ValueError(f"{name} must have a vocabulary axis, got shape {logits.shape}")
    if not jnp.issubdtype(logits.dtype, jnp.floating):
        raise ValueError(f"{name} must be floating point, got {logits.dtype}")


def scale_by_temperature(logits: jax.Array, temperature: float) -> jax.Array:
    """z / temperature. temperature > 0; 1 is the identity, -> 0 approaches argmax."""
    _check_logits(logits)
    if not temperature > 0.0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if temperature == 1.0:
        return logits
    return logits / jnp.asarray(temperature, logits.dtype)


def top_k_filter(logits: jax.Array, k: int) -> jax.Array:
    """Keep the k largest logits, set the rest to -inf (Fan et al. 2018).

    Ties: every token whose logit equals the k-th largest value is kept, so more than k
    tokens survive when the k-th place is tied (the result does not depend on the
    order in which a sort breaks ties). k = 0 or k >= V leaves the logits unchanged.
    """
    _check_logits(logits)
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    vocab = logits.shape[-1]
    if k == 0 or k >= vocab:
        return logits
    kth_largest = jax.lax.top_k(logits, k)[0][..., -1:]
    return jnp.where(logits >= kth_largest, logits, NEG_INF)


def top_p_filter(logits: jax.Array, p: float) -> jax.Array:
    """Nucleus filter (Holtzman et al. 2020): keep the smallest set of the largest
    logits whose softmax mass is >= p; the rest become -inf.

    With tokens sorted by decreasing probability q_(1) >= q_(2) >= ..., token (i) is kept
    iff the mass strictly before it, sum_{j<i} q_(j), is < p. The most likely token is
    therefore always kept. Ties at the boundary: every token whose logit equals the
    smallest kept logit is kept too (order-independent, like `top_k_filter`).
    p = 1 leaves the logits unchanged (no float round-off can drop tail tokens).
    Masses are those of softmax(logits) as given: apply temperature and top-k first.
    """
    _check_logits(logits)
    if not 0.0 < p <= 1.0:
        raise ValueError(f"p must be in (0, 1], got {p}")
    if p == 1.0:
        return logits
    sorted_logits = jnp.flip(jnp.sort(logits, axis=-1), axis=-1)
    sorted_probs = jax.nn.softmax(sorted_logits, axis=-1)
    mass_before = jnp.cumsum(sorted_probs, axis=-1) - sorted_probs
    num_kept = jnp.maximum(jnp.sum(mass_before < p, axis=-1, keepdims=True), 1)
    smallest_kept = jnp.take_along_axis(sorted_logits, num_kept - 1, axis=-1)
    return jnp.where(logits >= smallest_kept, logits, NEG_INF)


def filter_logits(logits: jax.Array, config: SamplingConfig) -> jax.Array:
    """Logits of the sampling distribution: temperature, then top-k, then top-p.

    The order is Hugging Face's; the top-p mass is measured after temperature and top-k.
    Not meaningful for greedy configs (use `greedy_tokens`).
    """
    scaled = scale_by_temperature(logits, config.temperature)
    return top_p_filter(top_k_filter(scaled, config.top_k), config.top_p)


def greedy_tokens(logits: jax.Array) -> jax.Array:
    """argmax over the vocabulary; ties go to the lowest token id (jnp.argmax)."""
    _check_logits(logits)
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)


def sample_tokens(key: jax.Array, logits: jax.Array, config: SamplingConfig
                  ) -> tuple[jax.Array, jax.Array]:
    """Draw one token per row of `logits` [B, V].

    Row b uses the key `fold_in(key, b)`, so a row's draw depends only on (key, b, its
    logits), not on the other rows or on the padded batch size. The draw is inverse
    transform sampling from one uniform per row (draw.inverse_cdf_index): the same
    distribution as `jax.random.categorical` with V times fewer random numbers.

    Returns:
      tokens          [B] int32.
      sample_logprobs [B] float32: log q(token), q the distribution actually sampled
                      (`filter_logits` then softmax). Greedy: 0 (a point mass).
    """
    _check_logits(logits)
    if logits.ndim != 2:
        raise ValueError(f"logits must be [B, V], got shape {logits.shape}")
    if config.greedy:
        tokens = greedy_tokens(logits)
        return tokens, jnp.zeros(tokens.shape, jnp.float32)
    filtered = filter_logits(logits.astype(jnp.float32), config)
    row_keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(
        key, jnp.arange(logits.shape[0], dtype=jnp.uint32))
    # q = softmax(filtered) from one exp: weights = exp(z - max z), log q = z - max z - log sum.
    shifted = filtered - jnp.max(filtered, axis=-1, keepdims=True)
    weights = jnp.exp(shifted)
    uniforms = jax.vmap(jax.random.uniform)(row_keys)
    tokens = inverse_cdf_index(weights, uniforms)
    picked = jnp.take_along_axis(shifted, tokens[:, None], axis=-1)[:, 0]
    sample_logprobs = picked - jnp.log(jnp.sum(weights, axis=-1))
    return tokens, sample_logprobs


def token_log_probs(logits: jax.Array, tokens: jax.Array) -> jax.Array:
    """log softmax(logits)[token] per row: logits [..., V], tokens [...] -> [...] float32."""
    _check_logits(logits)
    if tokens.shape != logits.shape[:-1]:
        raise ValueError(
            f"tokens shape {tokens.shape} must equal logits' leading shape {logits.shape[:-1]}")
    log_probs = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    return jnp.take_along_axis(log_probs, tokens[..., None].astype(jnp.int32), axis=-1)[..., 0]
