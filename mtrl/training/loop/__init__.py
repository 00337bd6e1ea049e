"""The training loop: the trainer and the stages it runs over a run.

  trainer.py           Trainer: SFT warm start, then per step grow, learn, evaluate, save
  rl_step.py           Learner: one step's score -> advantages -> update over its tree
  budget.py            the run's time budget: reported and warned about, never enforced
  process_roles.py     what differs between the processes of a multi-process run
"""
