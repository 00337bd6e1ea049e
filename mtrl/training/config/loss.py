"""The `loss` section: the policy objective (loss, clip, aggregation, the KL in the loss)
and where loss.kl_coef's KL penalty goes, "loss" or "reward" (the returns).

    build_objective(config) -> PolicyObjectiveConfig   # policy_loss, eps_*, aggregation
    kl_place(config) -> "loss" | "reward"              # loss.kl_in
    build_reward_kl(config) -> KLPenaltyConfig | None  # kl_in=reward with kl_coef > 0
"""

from __future__ import annotations

from mtrl.config.fields import build
from mtrl.losses import (AGGREGATIONS, KL_ESTIMATORS, KLPenaltyConfig, POLICY_LOSSES,
                         PolicyObjectiveConfig, check_kl_placement)
from mtrl.training.advantages.reference_pass import KL_PLACES


# PPO's clip range when the config sets none: DAPO's clip-higher (the default so far).
PPO_DEFAULT_CLIP = (0.2, 0.28)


def loss_name(name: str) -> str:
    """The registry name of config.loss.policy_loss; "turn_ratio" also names "turn-ratio"."""
    dashed = name.replace("_", "-")
    return dashed if dashed in POLICY_LOSSES else name


def build_objective(config) -> PolicyObjectiveConfig:
    """The objective of config.loss: every clip setting reaches every clipped loss,
    turn-ratio gets the rollout's number of turns (without it turn 2+ tokens drop out),
    and an unset loss.aggregation is the loss's own (GSPO: seq-mean-token-mean)."""
    loss = config.loss
    name = loss_name(loss.policy_loss)
    if name not in POLICY_LOSSES:
        raise ValueError(f"config.loss.policy_loss: unknown {loss.policy_loss!r}; valid: "
                         f"{', '.join(POLICY_LOSSES.names())} (turn_ratio = turn-ratio)")
    clip = {k: v for k, v in (("eps_low", loss.eps_low), ("eps_high", loss.eps_high),
                              ("dual_clip", loss.dual_clip or None)) if v is not None}
    if name == "ppo":
        clip = {"eps_low": PPO_DEFAULT_CLIP[0], "eps_high": PPO_DEFAULT_CLIP[1], **clip}
    if clip and not POLICY_LOSSES.get(name).clipped:
        clipped = [n for n in POLICY_LOSSES.names() if POLICY_LOSSES.get(n).clipped]
        raise ValueError(f"config.loss: {sorted(clip)} set, but {name!r} has no clip "
                         f"(clipped losses: {', '.join(clipped)})")
    options = dict(clip)
    if name == "turn-ratio":
        options["num_turns"] = config.rollout.num_turns
    elif name == "refuel":
        options["eta"] = loss.refuel_eta
    loss_config = build(POLICY_LOSSES.get(name).options, "loss", **options)
    if loss.aggregation is not None and loss.aggregation not in AGGREGATIONS:
        raise ValueError(f"config.loss.aggregation: unknown {loss.aggregation!r}; valid: "
                         f"{', '.join(AGGREGATIONS.names())} (unset: the loss's own)")
    kl = kl_penalty(config)
    if kl_place(config) == "reward":
        kl = KLPenaltyConfig(kl.estimator, 0.0)  # the penalty goes into the returns instead
    return build(PolicyObjectiveConfig, "loss", loss=name, loss_config=loss_config,
                 aggregation=loss.aggregation, kl=kl)


def kl_place(config) -> str:
    """config.loss.kl_in: "loss" (β·k per token in the loss) or "reward" (β·KL_i off
    each completion's return, training/advantages/reference_pass.py)."""
    if config.loss.kl_in not in KL_PLACES:
        raise ValueError(f"config.loss.kl_in: unknown {config.loss.kl_in!r}; valid: "
                         f"{', '.join(KL_PLACES)}")
    return config.loss.kl_in


def kl_penalty(config) -> KLPenaltyConfig:
    """config.loss.kl_estimator and kl_coef, each error naming its own field; an
    estimator that regularises nothing in loss.kl_in's place is refused
    (mtrl.losses.KL_PLACEMENTS: k1 in the loss, k2 / k3 in the reward)."""
    loss = config.loss
    if loss.kl_estimator not in KL_ESTIMATORS:
        raise ValueError(f"config.loss.kl_estimator: unknown {loss.kl_estimator!r}; valid: "
                         f"{', '.join(KL_ESTIMATORS.names())}")
    coef = loss.kl_coef
    if isinstance(coef, bool) or not isinstance(coef, (int, float)) or not coef >= 0:
        raise ValueError(f"config.loss.kl_coef: must be >= 0, got {coef!r}")
    try:
        check_kl_placement(loss.kl_estimator, kl_place(config), coef)
    except ValueError as e:
        raise ValueError(f"config.loss.kl_estimator: {e} (loss.kl_in={loss.kl_in!r}, "
                         f"kl_coef={coef})") from None
    return KLPenaltyConfig(loss.kl_estimator, float(coef))


def build_reward_kl(config) -> KLPenaltyConfig | None:
    """The KL penalty applied to returns (kl_in=reward with kl_coef > 0), else None."""
    if kl_place(config) != "reward" or not config.loss.kl_coef > 0:
        return None
    return kl_penalty(config)
