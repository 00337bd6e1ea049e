"""KL as a per-sequence reward penalty (the reward-side half of KL regularization).

CoMLRL (Liu et al. 2025, "LLM Collaboration with Multi-Agent Reinforcement
Learning") subtracts a KL estimate from each sequence's return instead of adding a
KL term to the loss:

  R'_i = R_i − β · KL_i

e.g. returns [1, 2], KL [0.2, 0.4], β = 0.5 → [0.9, 1.8]. KL_i is a per-sequence
estimate (for instance k3 = r − log r − 1 with r = π_ref/π, summed or averaged over
the sequence's tokens); the estimators themselves live in mtrl.losses.
"""

from __future__ import annotations

import jax

from mtrl.credit.group import as_float

Array = jax.Array


def apply_kl_penalty(returns, kl, coef) -> Array:
    """R − coef · KL, elementwise over equal shapes; `coef` (β) must be >= 0."""
    returns, kl = as_float(returns), as_float(kl)
    if returns.shape != kl.shape:
        raise ValueError(f"returns shape {returns.shape} must equal kl shape {kl.shape}")
    if isinstance(coef, (int, float)) and coef < 0:
        raise ValueError(f"coef must be >= 0 (a penalty), got {coef}")
    return returns - coef * kl
