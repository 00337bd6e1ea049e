"""The advantages stage: a StepRollout in, its loss mask filtered and per-token
advantages out. The array math it calls is mtrl.credit.

  estimators.py      credit estimators by name -> per-agent completion advantages
  penalties.py       the filters section: overlong penalty, void turns, on the batch
  loss_mask.py       the loss mask's one pipeline of named filters (TCOD, void turns)
  reference_pass.py  loss.kl_in=reward: the reference forward pass, its KL as a
                     per-completion return penalty
"""
