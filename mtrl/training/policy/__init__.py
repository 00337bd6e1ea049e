"""The policy's state, below every stage that reads or changes it (grow's sampler, score's
answer log-probs, advantages' reference pass, update, publish, SFT).

  train_state.py   parameters, optimizer state and reference parameters of N agents
  logprobs.py      per-token log-probabilities of rows under a policy
  optim.py         global-norm clipping, then AdamW on a warmup schedule
"""
