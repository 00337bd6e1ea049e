"""PPO clipped surrogate with asymmetric clip (ε_low, ε_high) and optional dual clip.

Schulman et al. 2017, "Proximal Policy Optimization Algorithms"; clip-higher
(ε_high > ε_low, e.g. 0.28 vs 0.2) from Yu et al. 2025, "DAPO: An Open-Source
LLM Reinforcement Learning System at Scale"; dual clip from Ye et al. 2020,
"Mastering Complex Control in MOBA Games with Deep Reinforcement Learning".

Per valid token, with r_t = π_θ(y_t)/π_old(y_t) and advantage A_t:

    ℓ_t = max(−r_t·A_t, −clip(r_t, 1 − ε_low, 1 + ε_high)·A_t)
    dual clip (c > 1), only where A_t < 0:   ℓ_t ← min(ℓ_t, −c·A_t)

i.e. the negated PPO objective min(r·A, clip(r)·A), whose A < 0 branch is
additionally bounded by c·|A| so that a very large ratio cannot produce an
unbounded loss. Clip indicators (each zeroes the token's gradient):
    clipped_low:  A < 0 and r < 1 − ε_low
    clipped_high: A > 0 and r > 1 + ε_high
    dual_clipped: A < 0 and the dual bound is the active branch (r > c).
GRPO's objective is this loss with "seq-mean-token-mean"; DAPO's is
"token-mean".
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from mtrl.losses.checks import check_shapes
from mtrl.losses.interface import (POLICY_LOSSES, PolicyLoss, PolicyLossInputs, PolicyLossOutput,
                                   check_policy_inputs, check_sequence_dtypes, masked_float32,
                                   ratio_diagnostics, safe_log_ratio)


def validate_clip_range(owner: str, eps_low: float, eps_high: float, dual_clip: float | None) -> None:
    """Shared __post_init__ checks of the clipped-surrogate hyperparameters."""
    if not 0.0 <= eps_low < 1.0:
        raise ValueError(f"{owner}.eps_low must be in [0, 1), got {eps_low}")
    if not eps_high >= 0.0:
        raise ValueError(f"{owner}.eps_high must be >= 0, got {eps_high}")
    if dual_clip is not None and not dual_clip > 1.0:
        raise ValueError(f"{owner}.dual_clip must be > 1 (Ye et al. 2020) or None, got {dual_clip}")


@dataclasses.dataclass(frozen=True)
class PPOClipConfig:
    """Hyperparameters of the clipped surrogate.

    eps_low: lower clip, ratio floor 1 − eps_low (0.2 in PPO/GRPO).
    eps_high: upper clip, ratio ceiling 1 + eps_high (0.2; DAPO's clip-higher 0.28).
    dual_clip: c > 1 bounding the loss of A < 0 tokens at c·|A| (3.0 in Ye
      et al. 2020), or None for no dual clip.
    """

    eps_low: float = 0.2
    eps_high: float = 0.2
    dual_clip: float | None = None

    def __post_init__(self):
        validate_clip_range("PPOClipConfig", self.eps_low, self.eps_high, self.dual_clip)


def clipped_surrogate(ratio_t: jax.Array, advantage_t: jax.Array, mask_t: jax.Array, *,
                      eps_low: float, eps_high: float, dual_clip: float | None
                      ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The clipped surrogate per token for any ratio (token, sequence or turn level).

    Args:
      ratio_t: [...] importance ratio per token (differentiable).
      advantage_t: [...] advantage per token, already zero outside the mask.
      mask_t: [...] valid tokens.

    Returns:
      (loss_t, clipped_low_t, clipped_high_t, dual_clipped_t), loss 0 and flags
      false outside the mask.
    """
    unclipped = -ratio_t * advantage_t
    clipped = -jnp.clip(ratio_t, 1.0 - eps_low, 1.0 + eps_high) * advantage_t
    loss_t = jnp.maximum(unclipped, clipped)
    negative = advantage_t < 0
    if dual_clip is None:
        dual_clipped = jnp.zeros(jnp.shape(mask_t), jnp.bool_)
    else:
        dual_bound = -dual_clip * advantage_t
        dual_clipped = mask_t & negative & (loss_t > dual_bound)
        loss_t = jnp.where(negative, jnp.minimum(loss_t, dual_bound), loss_t)
    ratio = jax.lax.stop_gradient(ratio_t)
    clipped_low = mask_t & negative & (ratio < 1.0 - eps_low)
    clipped_high = mask_t & (advantage_t > 0) & (ratio > 1.0 + eps_high)
    return jnp.where(mask_t, loss_t, 0.0), clipped_low, clipped_high, dual_clipped


def ppo_sequence_loss(logp_t: jax.Array, old_logp_t: jax.Array, advantage_t: jax.Array,
                      mask_t: jax.Array, config: PPOClipConfig = PPOClipConfig()) -> PolicyLossOutput:
    """Clipped-surrogate per-token losses of one sequence ([L] arrays)."""
    check_shapes("[L]", logp_t=logp_t, old_logp_t=old_logp_t, advantage_t=advantage_t, mask_t=mask_t)
    check_sequence_dtypes(logp_t, old_logp_t, advantage_t, mask_t)
    log_ratio_t = safe_log_ratio(logp_t, old_logp_t, mask_t)
    loss_t, low, high, dual = clipped_surrogate(
        jnp.exp(log_ratio_t), masked_float32(advantage_t, mask_t), mask_t,
        eps_low=config.eps_low, eps_high=config.eps_high, dual_clip=config.dual_clip)
    ratio, approx_kl = ratio_diagnostics(log_ratio_t, mask_t)
    return PolicyLossOutput(loss=loss_t, mask=mask_t, ratio=ratio, clipped_low=low,
                            clipped_high=high, dual_clipped=dual, approx_kl=approx_kl)


def ppo_loss(inputs: PolicyLossInputs, config: PPOClipConfig = PPOClipConfig()) -> PolicyLossOutput:
    """PPO clipped-surrogate per-token losses for a batch ([B, L] fields)."""
    check_policy_inputs(inputs)
    per_sequence = functools.partial(ppo_sequence_loss, config=config)
    return jax.vmap(per_sequence)(inputs.logp, inputs.old_logp, inputs.advantages, inputs.mask)


# DAPO's token-mean goes with the default clip-higher range (training/config/loss.py).
@dataclasses.dataclass(frozen=True)
class PPOOptions(PPOClipConfig):
    """The `ppo` loss's options: PPOClipConfig with DAPO's clip-higher as the default
    upper clip (what a run uses when config.loss leaves eps_high unset)."""

    eps_high: float = 0.28


POLICY_LOSSES.register("ppo")(PolicyLoss(
    fn=ppo_loss, options=PPOOptions, aggregation="token-mean",
    advantage_linear=True, group_size=1, needs_unscaled_returns=False))
