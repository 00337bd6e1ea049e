"""TextWorld games of four moves (the GiGPO claim, experiments/claims/gigpo_vs_grpo.py):
textworld.py's setup on coin collector level 4 instead of 1-2-move games.

Why each choice (the rest is textworld.py's):
- Games: coin collector level 4 only. A level-L coin collector game is a chain of
  rooms whose winning walkthrough is L moves (L − 1 "go <dir>", then "take coin"),
  the goal naming the directions in order. Level 4 is the shortest with four moves
  (the long-horizon claims ask for four or more); level 5+ would need T >= 5 turns, and the tree
  grows as G^T. With history "last" the agent sees only the goal, the current room
  and its exits, so it must infer from the exits which of the goal's directions is
  next (the way back is often also a goal direction): not trivial after SFT, which is
  what leaves room for RL (post-SFT validation wins measured in the claim file).
- T = 4 turns (no slack: one wrong or refused move loses the game), G = 3: 3 + 9 + 27
  + 81 = 120 generated samples per task per step, 2 tasks per step (240 samples).
  G^T rather than chains is the repository's tree rollout; in it, nodes at one turn
  often share a room (the same world facts), which GiGPO's anchor groups pool across
  nodes while GRPO's groups stop at a node's G siblings.
- SFT as textworld.py (240 updates of 16 rows: at 80 the policy collapsed onto one
  command there); 96 train games give 384 walkthrough steps.
- Context: level-4 goals are longer than textworld.py's; the longest validation and
  test prompts are ~550 bytes, over its 544, so rollout.max_context = 640. SFT rows
  stay at 544 (as measured): the ~7% of walkthrough steps whose prompt and command
  pass 544 bytes are cut or left out of SFT (the longest goals).
- RL 16 steps, validation every 8 (24 validation games): a step costs more than in
  textworld.py (T = 4 trees), and three seeds x two arms must fit the claim's budget.
"""

import pathlib

from mtrl.training.config import module_from_file

base = module_from_file(pathlib.Path(__file__).parent / "textworld.py")


def get_config():
    c = base.get_config()
    c.data.options = dict(seed=0, challenges=("tw-coin_collector:4",))
    c.rollout.num_turns = 4
    c.rollout.num_generations = 3
    c.rollout.max_context = 640
    c.train.steps = 16
    c.train.tasks_per_step = 2
    c.train.eval_interval = 8
    c.train.save_interval = 8
    return c
