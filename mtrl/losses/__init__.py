"""Policy losses, KL estimators and loss aggregation (docs/design.md section 4).

Three registries hold the swappable choices, and configs name them:
    POLICY_LOSSES   reinforce, ppo, gspo, gspo-token, turn-ratio, refuel
    KL_ESTIMATORS   k1, k2, k3
    AGGREGATIONS    token-mean, seq-mean-token-mean, seq-mean-token-sum, seq-mean-token-sum-norm

A policy loss maps PolicyLossInputs ([B, L]) to per-token losses and metric
pieces (PolicyLossOutput); an aggregation reduces them to a scalar;
`policy_objective` does both, adds the optional KL term and returns the metrics.
"""

from mtrl.losses.aggregation import (AGGREGATIONS, aggregate, seq_mean_token_mean,
                                     seq_mean_token_sum, seq_mean_token_sum_norm, token_mean)
from mtrl.losses.gspo import GSPOConfig, gspo_loss, gspo_sequence_loss, gspo_token_loss
from mtrl.losses.interface import (LOG_RATIO_LIMIT, POLICY_LOSSES, PolicyLoss, PolicyLossInputs,
                                   PolicyLossOutput, loss_options)
from mtrl.losses.kl import (KL_ESTIMATORS, KL_PLACEMENTS, KL_PLACES, KLPenaltyConfig,
                            check_kl_placement,
                            kl_k1, kl_k2, kl_k3, masked_kl, sequence_kl)
from mtrl.losses.masked import masked_count, masked_max, masked_mean, masked_min, masked_sum
from mtrl.losses.metrics import policy_loss_metrics
from mtrl.losses.objective import PolicyObjectiveConfig, policy_objective
from mtrl.losses.ppo import (PPOClipConfig, PPOOptions, clipped_surrogate, ppo_loss,
                             ppo_sequence_loss)
from mtrl.losses.refuel import RefuelConfig, refuel_loss, refuel_pair_loss, refuel_regression_loss
from mtrl.losses.reinforce import ReinforceConfig, reinforce_loss, reinforce_sequence_loss
from mtrl.losses.turn_ratio import (TurnRatioConfig, turn_mean, turn_ratio_loss,
                                    turn_ratio_sequence_loss)

__all__ = [
    # Registries.
    "AGGREGATIONS", "KL_ESTIMATORS", "POLICY_LOSSES",
    # Contract of the policy losses.
    "LOG_RATIO_LIMIT", "PolicyLoss", "PolicyLossInputs", "PolicyLossOutput", "loss_options",
    # Objective and metrics.
    "PolicyObjectiveConfig", "policy_objective", "policy_loss_metrics",
    # Policy losses: configs, batch functions, per-sequence (or per-pair) functions.
    "ReinforceConfig", "reinforce_loss", "reinforce_sequence_loss",
    "PPOClipConfig", "PPOOptions", "ppo_loss", "ppo_sequence_loss", "clipped_surrogate",
    "GSPOConfig", "gspo_loss", "gspo_token_loss", "gspo_sequence_loss",
    "TurnRatioConfig", "turn_ratio_loss", "turn_ratio_sequence_loss", "turn_mean",
    "RefuelConfig", "refuel_loss", "refuel_pair_loss", "refuel_regression_loss",
    # KL.
    "KL_PLACEMENTS", "KL_PLACES", "check_kl_placement", "KLPenaltyConfig", "kl_k1", "kl_k2", "kl_k3", "masked_kl", "sequence_kl",
    # Aggregations.
    "aggregate", "token_mean", "seq_mean_token_mean", "seq_mean_token_sum",
    "seq_mean_token_sum_norm",
    # Masked reductions.
    "masked_sum", "masked_count", "masked_mean", "masked_min", "masked_max",
]
