"""The grow stage: which tasks a step rolls out, and the rollout producer.

  curriculum.py     the curriculum section: the task order and learnable-band sampler
                    (and TCOD's turn schedule)
  async_rollout.py  the rollout producer: on-policy, or one step off
  stage.py          GrowStage: step s's tasks rolled out as one tree
"""
