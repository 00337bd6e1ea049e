"""The policy objective: a named loss, a named aggregation and an optional KL term.

    loss = aggregate_name( ℓ_t(policy loss) + β·k(π, π_ref)_t ,  mask )

This is the one call a train step needs; every choice in it is a registry name
held by a hashable frozen config, so the config can be a static argument of
jax.jit (or closed over) and the step traces once per input shape.

Exact reproductions of published objectives (see each loss's docstring); an
unset aggregation is the loss's own (PolicyLoss.aggregation: reinforce and
refuel seq-mean-token-sum, ppo and turn-ratio token-mean, gspo seq-mean-token-mean):
    MAGRPO    loss="reinforce", aggregation="seq-mean-token-sum"
    GRPO      loss="ppo", aggregation="seq-mean-token-mean", kl=KLPenaltyConfig("k3", β)
    DAPO      loss="ppo" with PPOClipConfig(0.2, 0.28), aggregation="token-mean"
    Dr. GRPO  loss="ppo", aggregation="seq-mean-token-sum-norm"
    GSPO      loss="gspo" (or "gspo-token"), aggregation="seq-mean-token-mean"
    REFUEL    loss="refuel", aggregation="seq-mean-token-sum"
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

from mtrl.config.fields import check_choice
from mtrl.losses.aggregation import AGGREGATIONS, aggregate
from mtrl.losses.interface import POLICY_LOSSES, PolicyLossInputs
from mtrl.losses.kl import KLPenaltyConfig, masked_kl
from mtrl.losses.masked import masked_mean
from mtrl.losses.metrics import policy_loss_metrics


@dataclasses.dataclass(frozen=True)
class PolicyObjectiveConfig:
    """Which loss, with which hyperparameters, reduced how, plus the KL term.

    loss: a name in POLICY_LOSSES.
    loss_config: an instance of that loss's options type (POLICY_LOSSES.get(loss)
      .options); None means its defaults.
    aggregation: a name in AGGREGATIONS; None means the loss's own (its paper's,
      PolicyLoss.aggregation), so a loss brings its objective unless overridden.
    max_length: L_max for "seq-mean-token-sum-norm" (None: the padded length).
    kl: the KL-to-reference term; its coefficient 0 disables it.
    """

    loss: str = "ppo"
    loss_config: Any = None
    aggregation: str | None = None
    max_length: int | None = None
    kl: KLPenaltyConfig = KLPenaltyConfig()

    def __post_init__(self):
        check_choice("PolicyObjectiveConfig.loss", self.loss, POLICY_LOSSES)
        config_type = POLICY_LOSSES.get(self.loss).options
        if self.loss_config is None:
            object.__setattr__(self, "loss_config", config_type())
        # Its options type, or the type it specializes (ppo's PPOOptions: a PPOClipConfig).
        elif type(self.loss_config) not in config_type.__mro__[:-1]:
            raise ValueError(f"loss {self.loss!r} takes a {config_type.__name__}, "
                             f"got {type(self.loss_config).__name__}")
        if self.aggregation is None:
            object.__setattr__(self, "aggregation", POLICY_LOSSES.get(self.loss).aggregation)
        check_choice("PolicyObjectiveConfig.aggregation", self.aggregation, AGGREGATIONS)
        if self.max_length is not None and (not isinstance(self.max_length, int)
                                            or self.max_length < 1):
            raise ValueError(f"PolicyObjectiveConfig.max_length must be a positive int or None, "
                             f"got {self.max_length!r}")
        if not isinstance(self.kl, KLPenaltyConfig):
            raise ValueError(f"PolicyObjectiveConfig.kl must be a KLPenaltyConfig, got {self.kl!r}")


def policy_objective(inputs: PolicyLossInputs, config: PolicyObjectiveConfig,
                     ref_logp: jax.Array | None = None) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The scalar loss to minimise and its metrics.

    Args:
      inputs: [B, L] log-probs, old log-probs, advantages, mask (and turn ids
        for "turn-ratio").
      config: the objective (static under jit).
      ref_logp: [B, L] log π_ref of the sampled tokens, required when
        config.kl.coef > 0; when given, the KL is reported even with coef 0.

    Returns:
      (loss, metrics): metrics holds "loss", "policy_loss" (without the KL
      term), "kl" when ref_logp is given, and those of policy_loss_metrics.
    """
    if ref_logp is None and config.kl.coef > 0:
        raise ValueError(f"config.kl.coef = {config.kl.coef} needs ref_logp ([B, L])")
    out = POLICY_LOSSES.get(config.loss).fn(inputs, config.loss_config)
    policy_loss = aggregate(out.loss, out.mask, config.aggregation, config.max_length)
    metrics = policy_loss_metrics(out)
    metrics["policy_loss"] = policy_loss
    loss = policy_loss
    if ref_logp is not None:
        kl_t = masked_kl(inputs.logp, ref_logp, out.mask, config.kl.estimator)
        metrics["kl"] = masked_mean(kl_t, out.mask)
        if config.kl.coef > 0:
            loss = aggregate(out.loss + config.kl.coef * kl_t, out.mask, config.aggregation,
                             config.max_length)
    metrics["loss"] = loss
    return loss, metrics
