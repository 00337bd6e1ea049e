"""REINFORCE: −A · Σ_t log π(y_t), MAGRPO's exact policy loss.

Williams 1992, "Simple statistical gradient-following algorithms for
connectionist reinforcement learning"; used without ratio, clipping or KL by
MAGRPO (Liu et al. 2025, "LLM Collaboration With Multi-Agent Reinforcement
Learning", the CoMLRL library):

    per completion:  ℓ = −A · Σ_t log π(y_t)        loss = mean of ℓ over the group

Per token this is ℓ_t = −A_t · log π(y_t) on valid tokens, and the
aggregation "seq-mean-token-sum" (mean over sequences of the per-sequence sum)
reproduces MAGRPO's loss exactly; its gradient is −mean_b A_b Σ_t ∇log π(y_bt).
Other aggregations give other weightings of the same estimator.

The loss ignores π_old; the reported ratio π/π_old (and approx_kl) only
diagnose sampler/trainer mismatch (on-policy they are 1 and 0).
"""

from __future__ import annotations

import dataclasses
import functools

import jax

from mtrl.losses.checks import check_shapes
from mtrl.losses.interface import (POLICY_LOSSES, PolicyLoss, PolicyLossInputs, PolicyLossOutput,
                                   check_policy_inputs, check_sequence_dtypes, masked_float32,
                                   safe_log_ratio, unclipped_output)


@dataclasses.dataclass(frozen=True)
class ReinforceConfig:
    """REINFORCE has no hyperparameters (MAGRPO: no ratio, no clip, no KL)."""


def reinforce_sequence_loss(logp_t: jax.Array, old_logp_t: jax.Array, advantage_t: jax.Array,
                            mask_t: jax.Array, config: ReinforceConfig = ReinforceConfig()
                            ) -> PolicyLossOutput:
    """ℓ_t = −A_t · log π(y_t) on valid tokens of one sequence ([L] arrays)."""
    check_shapes("[L]", logp_t=logp_t, old_logp_t=old_logp_t, advantage_t=advantage_t, mask_t=mask_t)
    check_sequence_dtypes(logp_t, old_logp_t, advantage_t, mask_t)
    del config  # Nothing to configure.
    loss_t = -masked_float32(advantage_t, mask_t) * masked_float32(logp_t, mask_t)
    return unclipped_output(loss_t, mask_t, safe_log_ratio(logp_t, old_logp_t, mask_t))


def reinforce_loss(inputs: PolicyLossInputs, config: ReinforceConfig = ReinforceConfig()
                   ) -> PolicyLossOutput:
    """REINFORCE per-token losses for a batch ([B, L] fields); see the module docstring."""
    check_policy_inputs(inputs)
    per_sequence = functools.partial(reinforce_sequence_loss, config=config)
    return jax.vmap(per_sequence)(inputs.logp, inputs.old_logp, inputs.advantages, inputs.mask)


POLICY_LOSSES.register("reinforce")(PolicyLoss(
    fn=reinforce_loss, options=ReinforceConfig, aggregation="seq-mean-token-sum",
    advantage_linear=True, group_size=1, needs_unscaled_returns=False))
