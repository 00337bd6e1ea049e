"""The `loss` section: the policy objective (loss, its options, aggregation, the KL in
the loss) and where loss.kl_coef's KL penalty goes, "loss" or "reward" (the returns).

    LossSection                        policy_loss, aggregation, kl_estimator, kl_coef,
                                       kl_in; each loss's options are config.loss fields
                                       too (its PolicyLoss.options: eps_low, eps_high,
                                       dual_clip, refuel_eta, ...)
    read_loss(section, num_turns) -> (LossParts | None, error lines)

An option a loss owns takes its loss's own default when the config leaves it unset
(None); one set under another loss is refused (mtrl/config/options.py), and an unset
loss.aggregation is the loss's own (GSPO: seq-mean-token-mean).
"""

from __future__ import annotations

import dataclasses

from mtrl.config.fields import build_all, check_choice, check_number
from mtrl.config.options import refuse_unowned, section_options, take_options
from mtrl.losses import (AGGREGATIONS, KL_ESTIMATORS, KL_PLACES, POLICY_LOSSES,
                         KLPenaltyConfig, PolicyObjectiveConfig, check_kl_placement,
                         loss_options)

# The old spelling of "no dual clip" (loss.dual_clip=0.0) is read as unset.
DUAL_CLIP_OFF = 0.0


@dataclasses.dataclass(frozen=True)
class LossSection:
    """The loss section's own fields (its losses' options come from their entries).

    policy_loss: a POLICY_LOSSES name ("turn_ratio" also names "turn-ratio").
    aggregation: an AGGREGATIONS name, None: the loss's own.
    kl_estimator / kl_coef: the KL penalty's estimator (k1 | k2 | k3) and β >= 0.
    kl_in: where the penalty goes, "loss" (β·k per token) or "reward" (β·KL_i off each
      completion's return, training/advantages/reference_pass.py)."""

    policy_loss: str = "reinforce"
    aggregation: str | None = None
    kl_estimator: str = "k3"
    kl_coef: float = 0.0
    kl_in: str = "loss"

    def __post_init__(self):
        object.__setattr__(self, "policy_loss", loss_name(self.policy_loss))
        check_choice("policy_loss", self.policy_loss, POLICY_LOSSES)
        if self.aggregation is not None:
            check_choice("aggregation", self.aggregation, AGGREGATIONS)
        check_choice("kl_estimator", self.kl_estimator, KL_ESTIMATORS)
        check_number("kl_coef", self.kl_coef, 0)
        check_choice("kl_in", self.kl_in, KL_PLACES)


@dataclasses.dataclass(frozen=True)
class LossParts:
    """The loss section as the run takes it (RunConfig.loss)."""

    objective: PolicyObjectiveConfig  # the policy loss, its options, the KL in the loss
    kl_in: str
    reward_kl: KLPenaltyConfig | None  # kl_in=reward with kl_coef > 0: β·KL_i off returns


def loss_name(name: str) -> str:
    """The registry name of config.loss.policy_loss; "turn_ratio" also names "turn-ratio"."""
    dashed = name.replace("_", "-") if isinstance(name, str) else name
    return dashed if dashed in POLICY_LOSSES else name


def read_loss(section: dict, num_turns: int | None) -> tuple[LossParts | None, list[str]]:
    """The loss section's parts, or the error lines (every one found)."""
    entries = loss_options()
    options = {k: section.pop(k) for k in list(section) if k in section_options(entries)}
    if options.get("dual_clip") == DUAL_CLIP_OFF:
        options["dual_clip"] = None
    own, lines = build_all(LossSection, "loss", **section)
    if own is None:
        return None, lines
    decl = entries[own.policy_loss]
    lines += refuse_unowned("loss", "policy_loss", own.policy_loss, options, entries)
    loss_config, more = build_all(lambda **kw: take_options(decl, kw, section_options(entries),
                                                            {"num_turns": num_turns}),
                                  "loss", **{k: v for k, v in options.items()
                                             if k in decl.fields()})
    lines += more
    try:
        check_kl_placement(own.kl_estimator, own.kl_in, own.kl_coef)
    except ValueError as e:
        lines.append(f"config.loss.kl_estimator: {e} (loss.kl_in={own.kl_in!r}, "
                     f"kl_coef={own.kl_coef})")
    if lines:
        return None, lines
    kl = KLPenaltyConfig(own.kl_estimator, float(own.kl_coef))
    in_loss = kl if own.kl_in == "loss" else KLPenaltyConfig(own.kl_estimator, 0.0)
    objective, more = build_all(PolicyObjectiveConfig, "loss", loss=own.policy_loss,
                                loss_config=loss_config, aggregation=own.aggregation,
                                kl=in_loss)
    reward_kl = kl if own.kl_in == "reward" and own.kl_coef > 0 else None
    return (LossParts(objective, own.kl_in, reward_kl) if objective else None), more
