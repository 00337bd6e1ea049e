"""Credit assignment: returns, group and turn-level advantages, reward shaping.

Pure functions over arrays with explicit masks (jit- and vmap-safe); swappable
choices are registered by name:

  GROUP_ADVANTAGES      grpo, dr_grpo, rloo, mean, max, raw   fn(rewards[G], mask[G] | None, **opts)
                        (entries declare unscaled / single_sample: group_function)
  JOINT_ACTION_MODES    align, cross
  INFORMATION_GAINS     prob, logprob                            (IGPO turn rewards)
                        (name -> function; signatures differ, see each docstring)
"""

from mtrl.credit.curriculum import (BandFilterConfig, LearnableBandFilter,
                                    back_to_front_start, back_to_front_turn_mask,
                                    front_to_back_turn_mask, front_to_back_window)
from mtrl.credit.filters import dapo_overlong_penalty
from mtrl.credit.gigpo import anchor_group_advantages, gigpo_advantages
from mtrl.credit.group import (GROUP_ADVANTAGES, GroupFunction, dr_grpo_advantages,
                               group_advantages, group_function, grpo_advantages,
                               masked_mean, masked_std,
                               max_baseline_advantages, mean_baseline_advantages,
                               raw_advantages, rloo_advantages)
from mtrl.credit.igpo import (INFORMATION_GAINS, final_turn_mask, igpo_advantages,
                              igpo_turn_rewards)
from mtrl.credit.joint_actions import (JOINT_ACTION_MODES, joint_action_index,
                                       num_joint_actions, per_agent_credit)
from mtrl.credit.kl_penalty import apply_kl_penalty
from mtrl.credit.magrpo import magrpo_advantages, row_advantages
from mtrl.credit.reward_recipe import RewardBreakdown, RewardRecipe, ShapingReport
from mtrl.credit.tree import (termination_mask, tree_advantages, tree_exists, tree_expanded,
                              tree_layout, tree_returns)
from mtrl.credit.turn_level import (MTGRPOAdvantages, broadcast_turns_to_tokens,
                                    discounted_returns, mt_grpo_advantages,
                                    mt_grpo_token_advantages, per_turn_advantages)
from mtrl.credit.ufo import ufo_reward

__all__ = [
    "GROUP_ADVANTAGES", "INFORMATION_GAINS", "JOINT_ACTION_MODES",
    # group
    "GroupFunction", "group_function", "group_advantages", "grpo_advantages", "dr_grpo_advantages", "rloo_advantages",
    "mean_baseline_advantages", "max_baseline_advantages", "raw_advantages",
    "masked_mean", "masked_std",
    # tree / MAGRPO
    "joint_action_index", "num_joint_actions", "per_agent_credit",
    "tree_layout", "tree_exists", "tree_returns", "tree_advantages", "termination_mask",
    "tree_expanded", "magrpo_advantages", "row_advantages",
    # turn level
    "discounted_returns", "per_turn_advantages", "broadcast_turns_to_tokens",
    "MTGRPOAdvantages", "mt_grpo_advantages", "mt_grpo_token_advantages",
    "igpo_turn_rewards", "igpo_advantages", "final_turn_mask",
    "anchor_group_advantages", "gigpo_advantages",
    "ufo_reward",
    # filters, shaping, curricula, KL
    "dapo_overlong_penalty",
    "RewardRecipe", "RewardBreakdown", "ShapingReport",
    "front_to_back_window", "back_to_front_start", "front_to_back_turn_mask",
    "back_to_front_turn_mask", "BandFilterConfig", "LearnableBandFilter",
    "apply_kl_penalty",
]
