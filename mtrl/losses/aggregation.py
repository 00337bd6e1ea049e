"""Named reductions of per-token losses [B, L] to one scalar.

How per-token losses are averaged changes the objective, not just its scale:
token-mean weights every token equally (long sequences dominate),
seq-mean-token-mean weights every sequence equally (tokens of short sequences
weigh more: the length bias of GRPO that Dr. GRPO removes), and the token-sum
forms keep the per-sequence sum of REINFORCE. References: Liu et al. 2025,
"Understanding R1-Zero-Like Training: A Critical Perspective" (Dr. GRPO:
divide by a constant instead of the sequence length); Yu et al. 2025, "DAPO"
(token-level mean).

Every aggregation has the signature

    fn(loss [B, L] float, mask [B, L] bool, max_length: int | None) -> scalar

(`max_length` is read by seq-mean-token-sum-norm only). With n_b = Σ_t m_bt the
valid tokens of sequence b and S = {b : n_b > 0} the non-empty sequences:

    token-mean               Σ_bt m·ℓ / Σ_bt m
    seq-mean-token-mean      (1/|S|) Σ_{b∈S} (Σ_t m·ℓ) / n_b
    seq-mean-token-sum       (1/|S|) Σ_{b∈S} Σ_t m·ℓ
    seq-mean-token-sum-norm  (1/|S|) Σ_{b∈S} Σ_t m·ℓ / L_max,   L_max = max_length or L

Sequences with no valid token are left out of the sequence means (not counted
as zeros), so padding rows added to reach a static batch size change nothing.
Every denominator is floored at 1: an all-false mask gives 0, never NaN.

Worked check: two sequences with valid losses [1, 1] and [2, 2, 2, 2] give
token-mean 10/6 = 1.6667 and seq-mean-token-mean (1 + 2)/2 = 1.5.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from mtrl.losses.checks import check_bool, check_floating, check_shapes
from mtrl.losses.masked import masked_count, masked_sum
from mtrl.registry import Registry

AggregationFn = Callable[[jax.Array, jax.Array, "int | None"], jax.Array]
AGGREGATIONS: Registry[AggregationFn] = Registry("loss aggregation")


def _check(loss: jax.Array, mask: jax.Array) -> None:
    check_shapes("[B, L]", loss=loss, mask=mask)
    check_floating("loss", loss)
    check_bool("mask", mask)


def _sequence_mean(per_sequence: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean of a [B] quantity over the sequences with at least one valid token."""
    nonempty = jnp.any(mask, axis=-1)
    return masked_sum(per_sequence, nonempty) / jnp.maximum(masked_count(nonempty), 1.0)


@AGGREGATIONS.register("token-mean")
def token_mean(loss: jax.Array, mask: jax.Array, max_length: int | None = None) -> jax.Array:
    """Σ_bt m·ℓ / max(Σ_bt m, 1): every valid token of the batch weighs the same (DAPO)."""
    del max_length  # Part of the common signature; unused here.
    _check(loss, mask)
    return masked_sum(loss, mask) / jnp.maximum(masked_count(mask), 1.0)


@AGGREGATIONS.register("seq-mean-token-mean")
def seq_mean_token_mean(loss: jax.Array, mask: jax.Array, max_length: int | None = None) -> jax.Array:
    """Mean over non-empty sequences of each sequence's token mean (GRPO, GSPO)."""
    del max_length  # Part of the common signature; unused here.
    _check(loss, mask)
    per_sequence = masked_sum(loss, mask, axis=-1) / jnp.maximum(masked_count(mask, axis=-1), 1.0)
    return _sequence_mean(per_sequence, mask)


@AGGREGATIONS.register("seq-mean-token-sum")
def seq_mean_token_sum(loss: jax.Array, mask: jax.Array, max_length: int | None = None) -> jax.Array:
    """Mean over non-empty sequences of each sequence's token sum (REINFORCE / MAGRPO)."""
    del max_length  # Part of the common signature; unused here.
    _check(loss, mask)
    return _sequence_mean(masked_sum(loss, mask, axis=-1), mask)


@AGGREGATIONS.register("seq-mean-token-sum-norm")
def seq_mean_token_sum_norm(loss: jax.Array, mask: jax.Array, max_length: int | None = None) -> jax.Array:
    """seq-mean-token-sum divided by the constant L_max (Dr. GRPO).

    L_max is `max_length` when given (a static Python int, e.g. the generation
    budget) and the padded length L otherwise; it must not depend on the data,
    which is what removes the length bias.
    """
    _check(loss, mask)
    if max_length is None:
        max_length = loss.shape[-1]
    if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 1:
        raise ValueError(f"max_length must be a positive Python int, got {max_length!r}")
    return _sequence_mean(masked_sum(loss, mask, axis=-1), mask) / max_length


def aggregate(loss: jax.Array, mask: jax.Array, name: str, max_length: int | None = None) -> jax.Array:
    """Reduces per-token losses [B, L] with the aggregation registered as `name`."""
    return AGGREGATIONS.get(name)(loss, mask, max_length)
