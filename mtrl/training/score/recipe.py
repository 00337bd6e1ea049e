"""`reward.recipe=recipe`: the episode reward of mtrl.credit.RewardRecipe in place of
the environment's per-turn rewards.

Every leaf of the tree (a joint action without children) ends one episode, its path
from the root; a step that ended its episode (StepResult.ended) is always a leaf, so
the leaf is the step where the outcome was decided and `turns` counts the turns the
episode actually played (solving sooner pays fewer step penalties). The leaf's reward
becomes the recipe's total for that episode,

  outcome(info["correct"] of the leaf) − step_penalty · turns − invalid_tool_penalty ·
  Σ_path info["invalid_calls"] + progress_coef · info["progress"] of the leaf,

and every other step's reward becomes 0, so tree returns (γ = 1) carry the episode's
reward back to each step as the mean over its continuations. `invalid_calls` and
`progress` are optional step info (0 when absent); `correct` is required. The recipe's
dominance check (shaping must not outweigh the outcome) runs when the config is built,
with max_turns = rollout.num_turns; `on_dominance` defaults to "raise" here.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mtrl.credit import RewardRecipe
from mtrl.rollout.tree import TreeRollout

RECIPE_NEEDS = frozenset({"correct"})  # step info the recipe reads on every step


def apply_recipe(recipe: RewardRecipe, tree: TreeRollout) -> TreeRollout:
    """The tree with every step's reward replaced (module docstring)."""
    joint = tree.joint_actions
    invalid_before = {}  # (turn, node) -> invalid calls on the path to that node
    rewards = [np.zeros_like(record.rewards) for record in tree.turns]
    for t, record, m, node, j, info in tree.joint_steps():
        if "correct" not in info:
            raise ValueError("reward.recipe: the environment's step info lacks "
                             "'correct' (docs/methods.md)")
        invalid = invalid_before.get((record.turn, node), 0) + int(info.get("invalid_calls", 0))
        if record.expanded[m, j]:
            invalid_before[(record.turn + 1, node * joint + j)] = invalid
            continue
        total = recipe.combine(np.asarray([bool(info["correct"])]), np.asarray([record.turn]),
                               np.asarray([invalid]),
                               np.asarray([float(info.get("progress", 0.0))])).total
        rewards[t][m, j] = float(total[0])
    return dataclasses.replace(tree, turns=[dataclasses.replace(record, rewards=r)
                                            for record, r in zip(tree.turns, rewards)])
