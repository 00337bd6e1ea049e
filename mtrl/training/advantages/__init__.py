"""The advantages stage: a StepRollout in, its loss mask filtered and per-token
advantages out. The array math it calls is mtrl.credit.

  registry.py         CREDIT_ESTIMATORS: each entry's traits and options; CreditConfig
  tree_estimators.py  magrpo, grpo, dr_grpo, rloo: tree returns, a group function
  path_estimators.py  mt_grpo, igpo, gigpo, ufo: the paper's function on paths
  estimators.py       token_advantages: the configured estimator's per-token advantages
  penalties.py        the filters section: overlong penalty, void turns, on the batch
  loss_mask.py        the loss mask's one pipeline of named filters (TCOD, void turns)
  reference_pass.py   loss.kl_in=reward: the reference forward pass, its KL as a
                      per-completion return penalty
  stage.py            AdvantageStage: a tree -> its StepRollout, mask and advantages
"""
