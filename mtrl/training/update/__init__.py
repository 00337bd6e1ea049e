"""The RL update: rows in, new parameters out (the policy state it updates: ../policy/).

  minibatch.py     the [N, B, L] rows one train step consumes
  row_groups.py    rows that must travel together: a loss's groups, REFUEL's pairs
  row_filter.py    train.drop_zero_advantage: only rows that carry a gradient
  packing.py       rows packed into fixed-budget sequences, shared prefixes once
  buckets.py       the ladder packed bin counts round up to (train.bin_buckets)
  train_step.py    the jitted step: log-probs, loss, gradient, optimizer, NaN guard
  step_metrics.py  the step's metrics and the host-side check of the NaN guard
  ppo_epochs.py    PPO's host loop of minibatch epochs over one batch of rows
  memory.py        what the train step needs in memory, checked when a run is built
  stage.py         UpdateStage: a step's rows -> new parameters (groups, filter, epochs)
"""
