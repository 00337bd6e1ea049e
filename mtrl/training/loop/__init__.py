"""The training loop: the trainer and what it carries between the stages.

  trainer.py        Trainer: SFT warm start, then per step grow, score, advantages,
                    update, publish, evaluate, save (each stage its own package)
  build_run.py      Run: a run's parts (components, sampler, backends, train step,
                    keeper, warm starter, stages), built once from its config
  stages.py         the step's stage objects, built from the run's typed sections
  loop_state.py     LoopState: step, band state, clocks, post-SFT numbers
  budget.py         the run's time budget: reported and warned about, never enforced
  process_roles.py  what differs between the processes of a multi-process run
"""
