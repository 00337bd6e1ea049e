"""Tree estimators: tree returns, summed per completion over joint actions, then a
group function of mtrl.credit's GROUP_ADVANTAGES over the agent's G completions of
the node (mtrl.credit.magrpo_advantages); per-completion return penalties allowed.

  magrpo   the group function named by its `baseline` option (Liu et al. 2025)
  grpo     (r − mean)/(std + ε)                (Shao et al. 2024)
  dr_grpo  r − mean                            (Liu et al. 2025, Dr. GRPO)
  rloo     r_i − mean of the others            (Ahmadian et al. 2024)
"""

from __future__ import annotations

import dataclasses

from mtrl.config.fields import check_bool, check_choice
from mtrl.credit import GROUP_ADVANTAGES, magrpo_advantages
from mtrl.rollout.step_rollout import StepRollout
from mtrl.training.advantages.registry import CREDIT_ESTIMATORS, Estimator, NoOptions



@dataclasses.dataclass(frozen=True)
class MagrpoOptions:
    """magrpo's options. baseline: a GROUP_ADVANTAGES name (mean | rloo | max | raw,
    or grpo | dr_grpo). normalize_std: divide by max(std, 1e-6) after the baseline."""

    baseline: str = "mean"
    normalize_std: bool = False

    def __post_init__(self):
        check_choice("baseline", self.baseline, GROUP_ADVANTAGES)
        check_bool("normalize_std", self.normalize_std)


def _tree(group_fn: str | None):
    def fn(rollout: StepRollout, credit, gamma, penalty=None):
        batch, options = rollout.batch, credit.options
        name = group_fn or options.baseline
        opts = {"normalize_std": True} if getattr(options, "normalize_std", False) else {}
        return magrpo_advantages(batch.rewards, batch.expanded, gamma=gamma,
                                 mode=batch.joint_mode, num_agents=batch.num_agents,
                                 num_generations=batch.num_generations, estimator=name,
                                 credit=credit.credit, penalty=penalty, **opts)
    return fn


def _unscaled(options: MagrpoOptions) -> bool:
    """magrpo's returns stay unscaled when its baseline's do and no std divides them."""
    return GROUP_ADVANTAGES.get(options.baseline).unscaled and not options.normalize_std


def _min_group_size(options: MagrpoOptions) -> int:
    """One sample per node suffices for a baseline that trains a lone sample."""
    return 1 if GROUP_ADVANTAGES.get(options.baseline).single_sample else 2


CREDIT_ESTIMATORS.register("magrpo")(Estimator(
    fn=_tree(None), kind="tree", needs=frozenset(), ends_at_success=False,
    options=MagrpoOptions, paper="Liu et al. 2025, MAGRPO / CoMLRL",
    unscaled_returns=_unscaled, min_group_size=_min_group_size))
# The others are one group function each, whose traits they take.
for _name, _paper in (
        ("grpo", "Shao et al. 2024, DeepSeekMath"),
        ("dr_grpo", "Liu et al. 2025, Understanding R1-Zero-Like Training"),
        ("rloo", "Ahmadian et al. 2024, Back to Basics")):
    _group = GROUP_ADVANTAGES.get(_name)
    CREDIT_ESTIMATORS.register(_name)(Estimator(
        fn=_tree(_name), kind="tree", needs=frozenset(), ends_at_success=False,
        options=NoOptions, unscaled_returns=_group.unscaled,
        min_group_size=1 if _group.single_sample else 2, paper=_paper))
