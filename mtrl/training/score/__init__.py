"""The score stage: what is computed on a grown tree before its advantages.

  recipe.py        reward.recipe: the episode reward in place of per-turn rewards
  answer_probs.py  IGPO's answer log-probabilities after each turn
  stage.py         ScoreStage: the recipe, then the answers, on a grown tree
"""
