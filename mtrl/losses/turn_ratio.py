"""Turn-level importance ratio: GSPO's geometric mean taken per turn.

In a multi-turn episode the policy writes several responses (turns) separated
by environment tokens. Turn-level importance sampling (Li et al. 2025,
"ST-PPO: Stabilized Off-Policy Proximal Policy Optimization for Multi-Turn
Agents", their Turn-PPO variant) replaces each token's ratio with the geometric
mean of the token ratios of its turn k:

    ρ_k(θ) = exp( (1/|k|) Σ_{t∈k} log(π_θ(y_t)/π_old(y_t)) )
    ℓ_t    = max(−ρ_k·A_t, −clip(ρ_k, 1 − ε_low, 1 + ε_high)·A_t)     for t ∈ k

with the optional dual clip of mtrl.losses.ppo. A_t is the per-token
advantage (turn-level credit may differ between turns). Tokens are grouped by
`turn_ids` (int, [L]); the number of turns K is static, and the per-turn means
are segment sums written as a one-hot [L, K] contraction, so the function jits
once per K. A token that is in the mask but whose turn id is outside [0, K) has
no turn ratio and is dropped from the loss (the output mask excludes it).

With one turn per sequence this is GSPO with PPO's clip range. The
aggregation is a separate choice, as for PPO ("token-mean" weighs every token
alike; "seq-mean-token-mean" every sequence).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from mtrl.losses.checks import check_integer, check_shapes
from mtrl.losses.interface import (POLICY_LOSSES, PolicyLoss, PolicyLossInputs, PolicyLossOutput,
                                   check_policy_inputs, check_sequence_dtypes, masked_float32,
                                   ratio_diagnostics, safe_log_ratio)
from mtrl.losses.ppo import clipped_surrogate, validate_clip_range


@dataclasses.dataclass(frozen=True)
class TurnRatioConfig:
    """num_turns: K, a static bound on turn ids; eps_low / eps_high / dual_clip as in PPOClipConfig."""

    num_turns: int = 1
    eps_low: float = 0.2
    eps_high: float = 0.2
    dual_clip: float | None = None

    def __post_init__(self):
        if not isinstance(self.num_turns, int) or self.num_turns < 1:
            raise ValueError(f"TurnRatioConfig.num_turns must be an int >= 1, got {self.num_turns!r}")
        validate_clip_range("TurnRatioConfig", self.eps_low, self.eps_high, self.dual_clip)


def turn_mean(x_t: jax.Array, turn_ids_t: jax.Array, mask_t: jax.Array, num_turns: int
              ) -> tuple[jax.Array, jax.Array]:
    """Mean of x over each token's turn, broadcast back to the tokens.

    Args:
      x_t: [L] values (zero outside the mask).
      turn_ids_t: [L] int turn index per token.
      mask_t: [L] bool valid tokens.
      num_turns: K; turns are 0..K−1.

    Returns:
      (mean_t [L], in_turn_t [L] bool): the mean over the valid tokens of the
      token's turn (0 where in_turn_t is false), and whether the token is valid
      with a turn id in [0, K).
    """
    one_hot = (turn_ids_t[:, None] == jnp.arange(num_turns)[None, :]) & mask_t[:, None]  # [L, K]
    weights = one_hot.astype(jnp.float32)
    # Elementwise sums, not matmuls: accelerators may run float32 matmuls in bfloat16.
    counts = jnp.sum(weights, axis=0)  # [K]
    means = jnp.sum(weights * x_t[:, None], axis=0) / jnp.maximum(counts, 1.0)  # [K]
    return jnp.sum(weights * means[None, :], axis=-1), jnp.any(one_hot, axis=-1)


def turn_ratio_sequence_loss(logp_t: jax.Array, old_logp_t: jax.Array, advantage_t: jax.Array,
                             mask_t: jax.Array, turn_ids_t: jax.Array,
                             config: TurnRatioConfig = TurnRatioConfig()) -> PolicyLossOutput:
    """Turn-level clipped-surrogate per-token losses of one sequence ([L] arrays)."""
    check_shapes("[L]", logp_t=logp_t, old_logp_t=old_logp_t, advantage_t=advantage_t,
                 mask_t=mask_t, turn_ids_t=turn_ids_t)
    check_sequence_dtypes(logp_t, old_logp_t, advantage_t, mask_t)
    check_integer("turn_ids_t", turn_ids_t)
    token_log_ratio_t = safe_log_ratio(logp_t, old_logp_t, mask_t)
    turn_log_ratio_t, in_turn_t = turn_mean(token_log_ratio_t, turn_ids_t, mask_t, config.num_turns)
    loss_t, low, high, dual = clipped_surrogate(
        jnp.exp(turn_log_ratio_t), masked_float32(advantage_t, in_turn_t), in_turn_t,
        eps_low=config.eps_low, eps_high=config.eps_high, dual_clip=config.dual_clip)
    ratio, _ = ratio_diagnostics(turn_log_ratio_t, in_turn_t)
    _, approx_kl = ratio_diagnostics(token_log_ratio_t, in_turn_t)
    return PolicyLossOutput(loss=loss_t, mask=in_turn_t, ratio=ratio, clipped_low=low,
                            clipped_high=high, dual_clipped=dual, approx_kl=approx_kl)


def turn_ratio_loss(inputs: PolicyLossInputs, config: TurnRatioConfig = TurnRatioConfig()
                    ) -> PolicyLossOutput:
    """Turn-level-ratio per-token losses for a batch ([B, L] fields, turn_ids required)."""
    check_policy_inputs(inputs, needs_turn_ids=True)
    per_sequence = functools.partial(turn_ratio_sequence_loss, config=config)
    return jax.vmap(per_sequence)(inputs.logp, inputs.old_logp, inputs.advantages, inputs.mask,
                                  inputs.turn_ids)


# A PPO variant with per-turn ratios: PPO's (DAPO's) token-mean. Its term is A·f(ρ_k) too,
# but leaving zero-advantage rows out of the packed forward was never verified with
# per-turn ratios, so it does not claim advantage_linear.
POLICY_LOSSES.register("turn-ratio")(PolicyLoss(
    fn=turn_ratio_loss, options=TurnRatioConfig, aggregation="token-mean",
    advantage_linear=False, group_size=1, needs_unscaled_returns=False,
    context=("num_turns",)))
