"""REFUEL: pairwise regression of relative log-ratios onto relative future returns.

Gao et al. 2024, "Regressing the Relative Future: Efficient Policy Optimization
for Multi-turn RLHF" (REFUEL; the multi-turn extension of REBEL, Gao et al.
2024). From a shared prefix s_h (the history up to turn h, rolled in with
π_old) two responses y, y' are sampled and rolled out to the episode's end;
Q̂(s_h, y) is the return from turn h on. The policy is the least-squares
solution of

    ℓ = ( (1/η)·[ ln π_θ(y|s_h)/π_old(y|s_h) − ln π_θ(y'|s_h)/π_old(y'|s_h) ] − (Q̂(s_h,y) − Q̂(s_h,y')) )²

averaged over pairs; ln π(y|s_h) is the sum of the token log-probs of the
response y (here: the sequence's valid tokens, so the mask should cover turn
h's response only), and η > 0 is the step-size-like scale of the regression.

Batch layout: rows (2i, 2i+1) of the [B, L] inputs form pair i (B even), i.e.
a group of G = 2 siblings flattened. Q̂ is read per row as the mean of
`advantages` over its valid tokens, so pass the returns Q̂ broadcast over the
response tokens. A pair with a row that has no loss token leaves the loss
whole (refuel_pair_loss). Only the difference within a pair enters, so a baseline
shared by the two siblings (mean) cancels; do not std-normalise (that rescales
the target) and do not use RLOO (it scales the difference by G/(G−1)).

Per-token output: the pair loss ℓ is spread over each row as ℓ·m_t/n (n the
row's valid tokens), so each row sums to ℓ and "seq-mean-token-sum" gives the
mean of ℓ over the trained pairs, REFUEL's objective exactly. Other
aggregations reweight pairs. No clipping; ratio metrics are diagnostics.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from mtrl.losses.checks import check_bool, check_floating, check_shapes
from mtrl.losses.interface import (POLICY_LOSSES, PolicyLoss, PolicyLossInputs, PolicyLossOutput,
                                   check_policy_inputs, safe_log_ratio, unclipped_output)
from mtrl.losses.masked import masked_count, masked_mean, masked_sum


@dataclasses.dataclass(frozen=True)
class RefuelConfig:
    """eta: η > 0, the scale between log-ratio differences and return differences."""

    eta: float = 1.0

    def __post_init__(self):
        if not self.eta > 0.0:
            raise ValueError(f"RefuelConfig.eta must be > 0, got {self.eta}")


def refuel_regression_loss(logp_t: jax.Array, old_logp_t: jax.Array, return_: jax.Array,
                           mask_t: jax.Array, config: RefuelConfig = RefuelConfig()) -> jax.Array:
    """The scalar REFUEL loss ℓ of one pair.

    Args:
      logp_t, old_logp_t: [2, L] token log-probs of the two responses under π_θ and π_old.
      return_: [2] Q̂(s_h, y) and Q̂(s_h, y').
      mask_t: [2, L] bool, the response tokens.
      config: η.
    """
    check_shapes("[2, L]", logp_t=logp_t, old_logp_t=old_logp_t, mask_t=mask_t)
    if jnp.shape(logp_t)[0] != 2:
        raise ValueError(f"a REFUEL pair has 2 rows, got logp_t of shape {jnp.shape(logp_t)}")
    if jnp.shape(return_) != (2,):
        raise ValueError(f"return_ must have shape (2,), got {jnp.shape(return_)}")
    check_floating("logp_t", logp_t)
    check_floating("old_logp_t", old_logp_t)
    check_floating("return_", return_)
    check_bool("mask_t", mask_t)
    sequence_log_ratio = masked_sum(safe_log_ratio(logp_t, old_logp_t, mask_t), mask_t, axis=-1)
    predicted = (sequence_log_ratio[0] - sequence_log_ratio[1]) / config.eta
    target = (return_[0] - return_[1]).astype(jnp.float32)
    return jnp.square(predicted - target)


def refuel_pair_loss(logp_t: jax.Array, old_logp_t: jax.Array, return_: jax.Array,
                     mask_t: jax.Array, config: RefuelConfig = RefuelConfig()) -> PolicyLossOutput:
    """Per-token form of one pair ([2, L]): ℓ·m_t/n on each row, so each row sums to ℓ.

    A pair is trained only when both rows have a loss token. A row out of the loss (a
    context cut, the void-turn filter, a turn after the episode ended) has no log-ratio
    and reads Q̂ = 0 (the mean over no tokens), so the regression would target
    Q̂(y) − 0 instead of Q̂(y) − Q̂(y'): the whole pair leaves the loss (output mask
    false on both rows, so the aggregation does not count it either).
    """
    check_shapes("[2, L]", mask_t=mask_t)
    mask_t = mask_t & jnp.all(jnp.any(mask_t, axis=-1))
    pair_loss = refuel_regression_loss(logp_t, old_logp_t, return_, mask_t, config)
    row_tokens = jnp.maximum(masked_count(mask_t, axis=-1), 1.0)  # [2]
    loss_t = pair_loss * mask_t.astype(jnp.float32) / row_tokens[:, None]
    return unclipped_output(loss_t, mask_t, safe_log_ratio(logp_t, old_logp_t, mask_t))


def refuel_loss(inputs: PolicyLossInputs, config: RefuelConfig = RefuelConfig()) -> PolicyLossOutput:
    """REFUEL per-token losses for a batch whose rows (2i, 2i+1) are pairs ([B, L], B even)."""
    batch, length = check_policy_inputs(inputs)
    if batch % 2:
        raise ValueError(f"REFUEL pairs rows (2i, 2i+1); the batch size must be even, got {batch}")
    returns = masked_mean(inputs.advantages.astype(jnp.float32), inputs.mask, axis=-1)  # [B]

    def pairs(x):
        return x.reshape((batch // 2, 2) + x.shape[1:])

    per_pair = functools.partial(refuel_pair_loss, config=config)
    out = jax.vmap(per_pair)(pairs(inputs.logp), pairs(inputs.old_logp), pairs(returns),
                             pairs(inputs.mask))
    return jax.tree.map(lambda x: x.reshape((batch, length)), out)


# Squared error against η·(return difference): not linear in A; rows come in sibling pairs.
POLICY_LOSSES.register("refuel")(PolicyLoss(
    fn=refuel_loss, options=RefuelConfig, aggregation="seq-mean-token-sum",
    advantage_linear=False, group_size=2, needs_unscaled_returns=True,
    config_names={"eta": "refuel_eta"}))
