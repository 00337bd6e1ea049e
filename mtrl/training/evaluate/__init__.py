"""The evaluate stage: held-out episodes of the current policy.

  evaluation.py        held-out episodic success within T turns
  feedback_gain.py     the feedback-use measure (pure: counts -> metrics)
  feedback_probe.py    its probe: a failed turn's next turn after the observation
                       and after "Try again." instead
  distributed_eval.py  that evaluation split across processes and reduced
"""
