"""The evaluate stage: held-out episodes of the current policy.

  evaluation.py        held-out episodic success within T turns
  distributed_eval.py  that evaluation split across processes and reduced
"""
