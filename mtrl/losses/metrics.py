"""Scalar metrics of a policy loss, reduced over its valid tokens.

All are token-weighted masked reductions over the whole batch (independent of
the loss aggregation, so runs with different aggregations stay comparable), and
all are finite when no token is valid (fractions and means 0, ratio min/max 1).

    clip_frac_low / clip_frac_high / dual_clip_frac   fraction of valid tokens with that clip active
    clip_frac                                         clip_frac_low + clip_frac_high
    ratio_mean / ratio_min / ratio_max                the importance ratio in the objective
    approx_kl                                         mean of (r − 1) − log r, r = π/π_old (k3)
    num_tokens                                        number of valid tokens
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from mtrl.losses.interface import PolicyLossOutput
from mtrl.losses.masked import masked_count, masked_max, masked_mean, masked_min


def policy_loss_metrics(out: PolicyLossOutput) -> dict[str, jax.Array]:
    """Reduces the per-token pieces of a PolicyLossOutput (any shape) to scalars."""
    mask = out.mask
    low = masked_mean(out.clipped_low.astype(jnp.float32), mask)
    high = masked_mean(out.clipped_high.astype(jnp.float32), mask)
    return {
        "clip_frac_low": low,
        "clip_frac_high": high,
        "clip_frac": low + high,
        "dual_clip_frac": masked_mean(out.dual_clipped.astype(jnp.float32), mask),
        "ratio_mean": masked_mean(out.ratio, mask),
        "ratio_min": masked_min(out.ratio, mask, empty_value=1.0),
        "ratio_max": masked_max(out.ratio, mask, empty_value=1.0),
        "approx_kl": masked_mean(out.approx_kl, mask),
        "num_tokens": masked_count(mask),
    }
