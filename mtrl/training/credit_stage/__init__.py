"""The credit stage: a rollout tree or batch in, per-token advantages and the loss mask
out. It owns every layout conversion between the host tree, dense rows, the per-turn
layout and root-to-leaf paths; the array math it calls is mtrl.credit.

  methods.py       credit estimators by name -> per-agent completion advantages
  tree_paths.py    a rollout tree as its root-to-leaf paths, and back to dense rows
  answer_probs.py  IGPO's answer log-probabilities after each turn
  reward_kl.py     loss.kl_in=reward: the KL as a per-completion return penalty
  recipe.py        reward.recipe: the episode reward in place of per-turn rewards
  curriculum.py    the curriculum section: which tasks and turns carry loss
  filters.py       the filters section: overlong penalty, void turns, on the batch
  loss_mask.py     the loss mask's one pipeline of named filters (TCOD, void turns)
  row_filter.py    train.drop_zero_advantage: only rows that carry a gradient
  row_groups.py    rows that must travel together: a loss's groups, REFUEL's pairs
"""
