"""GSPO: the clipped surrogate on a sequence-level importance ratio.

Zheng et al. 2025, "Group Sequence Policy Optimization" (Qwen team). For a
response y_i of |y_i| valid tokens, the ratio is the geometric mean of the
token ratios (length-normalised sequence likelihood ratio):

    s_i(θ) = (π_θ(y_i|x) / π_old(y_i|x))^(1/|y_i|) = exp( (1/|y_i|) Σ_t log(π_θ(y_it)/π_old(y_it)) )
    J_GSPO = mean_i min(s_i·A_i, clip(s_i, 1 − ε_low, 1 + ε_high)·A_i)

"gspo" writes the negated term on every valid token of sequence i (A_i is the
mean of the sequence's per-token advantages, constant in GSPO), so
"seq-mean-token-mean" reproduces J_GSPO exactly; the gradient reaches every
token through s_i.

"gspo-token" is the paper's GSPO-token variant for per-token advantages A_it:

    s_it(θ) = sg[s_i(θ)] · π_θ(y_it) / sg[π_θ(y_it)]
    J = mean_i (1/|y_i|) Σ_t min(s_it·A_it, clip(s_it, 1 − ε_low, 1 + ε_high)·A_it)

s_it equals s_i in value (so the clip decisions are per sequence) but its
gradient is that of the token's own log-probability; with A_it = A_i it has the
same value and gradient as GSPO. Exact aggregation: "seq-mean-token-mean".

The paper's clip ranges are far smaller than PPO's, since s_i is an average:
ε_low = 3e-4, ε_high = 4e-4 (the defaults here). Clip metrics are per token, so
a clipped sequence counts with all its tokens.
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
from mtrl.losses.masked import masked_mean
from mtrl.losses.ppo import clipped_surrogate, validate_clip_range


@dataclasses.dataclass(frozen=True)
class GSPOConfig:
    """Clip range of the sequence-level ratio (Zheng et al. 2025: 3e-4 / 4e-4), and
    an optional dual clip c > 1 as in PPOClipConfig (not in the paper; None: off)."""

    eps_low: float = 3e-4
    eps_high: float = 4e-4
    dual_clip: float | None = None

    def __post_init__(self):
        validate_clip_range("GSPOConfig", self.eps_low, self.eps_high, self.dual_clip)


def gspo_sequence_loss(logp_t: jax.Array, old_logp_t: jax.Array, advantage_t: jax.Array,
                       mask_t: jax.Array, config: GSPOConfig = GSPOConfig(),
                       token_level: bool = False) -> PolicyLossOutput:
    """GSPO (or GSPO-token when `token_level`) per-token losses of one sequence ([L] arrays)."""
    check_shapes("[L]", logp_t=logp_t, old_logp_t=old_logp_t, advantage_t=advantage_t, mask_t=mask_t)
    check_sequence_dtypes(logp_t, old_logp_t, advantage_t, mask_t)
    log_ratio_t = safe_log_ratio(logp_t, old_logp_t, mask_t)
    sequence_log_ratio = masked_mean(log_ratio_t, mask_t)  # 0 for an empty sequence
    advantage_t = masked_float32(advantage_t, mask_t)
    if token_level:
        logp_safe = masked_float32(logp_t, mask_t)
        # Value s_i, gradient ∇log π(y_t): exp(x − sg(x)) is 1 with derivative 1.
        ratio_t = (jax.lax.stop_gradient(jnp.exp(sequence_log_ratio))
                   * jnp.exp(logp_safe - jax.lax.stop_gradient(logp_safe)))
    else:
        ratio_t = jnp.broadcast_to(jnp.exp(sequence_log_ratio), jnp.shape(log_ratio_t))
        advantage_t = jnp.where(mask_t, masked_mean(advantage_t, mask_t), 0.0)
    loss_t, low, high, dual = clipped_surrogate(
        ratio_t, advantage_t, mask_t, eps_low=config.eps_low, eps_high=config.eps_high,
        dual_clip=config.dual_clip)
    sequence_log_ratio_t = jnp.where(mask_t, sequence_log_ratio, 0.0)
    ratio, _ = ratio_diagnostics(sequence_log_ratio_t, mask_t)
    # approx_kl stays a token-level estimate of KL(π_old ‖ π), comparable across losses.
    _, approx_kl = ratio_diagnostics(log_ratio_t, mask_t)
    return PolicyLossOutput(loss=loss_t, mask=mask_t, ratio=ratio, clipped_low=low,
                            clipped_high=high, dual_clipped=dual, approx_kl=approx_kl)


def gspo_loss(inputs: PolicyLossInputs, config: GSPOConfig = GSPOConfig()) -> PolicyLossOutput:
    """GSPO per-token losses for a batch ([B, L] fields); aggregate with seq-mean-token-mean."""
    check_policy_inputs(inputs)
    per_sequence = functools.partial(gspo_sequence_loss, config=config, token_level=False)
    return jax.vmap(per_sequence)(inputs.logp, inputs.old_logp, inputs.advantages, inputs.mask)


def gspo_token_loss(inputs: PolicyLossInputs, config: GSPOConfig = GSPOConfig()) -> PolicyLossOutput:
    """GSPO-token per-token losses for a batch ([B, L] fields); aggregate with seq-mean-token-mean."""
    check_policy_inputs(inputs)
    per_sequence = functools.partial(gspo_sequence_loss, config=config, token_level=True)
    return jax.vmap(per_sequence)(inputs.logp, inputs.old_logp, inputs.advantages, inputs.mask)


for _name, _fn in (("gspo", gspo_loss), ("gspo-token", gspo_token_loss)):
    POLICY_LOSSES.register(_name)(PolicyLoss(
        fn=_fn, options=GSPOConfig, aggregation="seq-mean-token-mean",
        advantage_linear=True, group_size=1, needs_unscaled_returns=False))
