"""The language-model head over training tokens: the log-probability of each given
token, without holding the logits of all of them.

A loss over N tokens reads, per token n, only

    logp[n] = z_n[t_n] − logsumexp_v z_n[v],        z_n = hidden[n] · W_out   [V]

(the target's logit and the log-normaliser), yet the plain way to get it materialises
the float32 logits [N, V], their softmax and, in the backward pass, their cotangent:
for SmolLM2's 49,152-token vocabulary that is 197 kB per token, 2.4 GB per pass over
12k tokens. `token_logprobs` instead projects `chunk` tokens at a time inside a
`jax.lax.map` whose body is `jax.checkpoint`ed, so the backward pass recomputes each
chunk's logits from its hidden states (one more [chunk, D] x [D, V] product per chunk)
and memory is O(chunk · V). The projection is the caller's `logits_fn`
(Transformer.logits: tied or untied, XLA or the oneDNN custom call, LoRA's base and
adapters alike), so the chunked head multiplies exactly where the whole one does.

chunk = 0 projects all N tokens at once (the whole head: the reference the chunked
one is tested against, and the "before" of the memory records).
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

# Tokens whose [chunk, V] logits exist at once: 512 x 49,152 float32 logits are ~100 MB,
# where a whole packed step's [P·S, V] ran to gigabytes. ModelConfig.logits_chunk's default.
LOGITS_CHUNK = 512


def token_logprobs(logits_fn: Callable[[jax.Array], jax.Array], hidden: jax.Array,
                   targets: jax.Array, chunk: int = LOGITS_CHUNK) -> jax.Array:
    """[N] float32 log-probabilities of `targets` under the logits of `hidden`:

        logp[n] = z_n[targets[n]] − logsumexp_v z_n[v],   z_n = logits_fn(hidden[n])

    hidden [N, D] (any float dtype: bf16 under mixed precision), targets int [N];
    chunk >= 1 tokens per projection (the last chunk padded with zeros, whose results
    are dropped), or 0 for all N at once. The logits are taken in float32 whatever
    logits_fn returns: the log-softmax of a bf16 logit (ulp 2⁻⁴ at |z| ≈ 8) would put
    errors of hundredths of a nat into every importance ratio.
    """
    if hidden.ndim != 2 or targets.shape != hidden.shape[:1]:
        raise ValueError(f"hidden must be [N, D] and targets [N], got {hidden.shape}, "
                         f"{targets.shape}")
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 0:
        raise ValueError(f"chunk must be an int >= 0 (0: the whole head), got {chunk!r}")

    def one_chunk(args):
        h_c, t_c = args
        z = logits_fn(h_c).astype(jnp.float32)
        picked = jnp.take_along_axis(z, t_c[:, None], axis=-1)[:, 0]
        return picked - jax.nn.logsumexp(z, axis=-1)

    n = hidden.shape[0]
    if chunk == 0 or chunk >= n:
        # One projection: rematerialising a lone chunk would hold the same [N, V] in
        # the backward pass as keeping it does, at the cost of a second product.
        return one_chunk((hidden, targets))
    pad = -n % chunk
    h = jnp.pad(hidden, ((0, pad), (0, 0))).reshape(-1, chunk, hidden.shape[1])
    t = jnp.pad(targets, (0, pad)).reshape(-1, chunk)
    return jax.lax.map(jax.checkpoint(one_chunk), (h, t)).reshape(-1)[:n]
