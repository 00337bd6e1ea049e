"""A two-turn calculator task in the tool environment, for an MT-GRPO claim
(not written yet: see the measurements at the end): tool.py's environment on
generated products (mtrl/data/calc_suite.py) instead of GSM8K.

Why each choice (the rest is tool.py's):
- Task: "What is 4827 * 391?" (4- and 3-digit operands). The tiny byte model cannot
  multiply; copying is what it can learn, so an exact answer needs the tool: turn 1
  calls print(a*b), turn 2 copies the printed product into \\boxed{}. GSM8K (tool.py)
  is out of the model's reach (success ~0), which would show no effect at all.
- SFT: both turns of every demonstration (the call; the answer after the sandbox's
  real output), with a share `direct_fraction` of the first turns answering at once
  without the tool (the true product, which the model cannot reproduce on new
  operands): the warm start then calls the tool in part of its samples only, so
  whether RL keeps or drops the calls is what the arms can differ on, the behaviour
  Zeng et al. report (outcome-only GRPO's tool calls decay).
- SFT: 512 train tasks, 100 updates of 16 rows (~2 passes over the ~870 rows: the
  calls, the answers after them, the direct answers), rows padded to 384 tokens.
- T = 2 turns, G = 4, no early termination of solved nodes (1.0 is above every
  mean reward of 0/1 outcomes plus a call reward 0 in the outcome arm): 4 + 16 = 20
  samples per task per step in both arms.
- Rewards: the environment's (reward.recipe=env): outcome 1 for an exact answer;
  env.call_reward (0 here: outcome only) is the turn-level reward a claim
  arm sets for a clean call whose output holds the answer (MT-GRPO's verifiable turn
  reward). The recipe (tool.py's) would replace every non-final reward with 0,
  leaving MT-GRPO nothing to credit turns with.
- Context: prompt ~200 bytes, a call ~30, the output line ~20, an answer ~20:
  max_new_tokens 40 and a 384-token context (SFT rows padded to 384).
- RL 20 steps of 4 tasks, validation (100 tasks) every 10; test 200 tasks.

NOT YET USABLE FOR A CLAIM (measured 2026-11-26, SFT-only warm starts, seed 0,
validation only, test split off): post-SFT validation exact match 0.00 with 100 SFT
updates at (4, 3) digits (final SFT loss 0.83, 4 minutes) and 0.00 with 300 updates
at (3, 2) digits (loss 0.63, 7 minutes); first-turn tool-call rate 1.00 in both. The
greedy policy writes one fixed call (print(602*60)) and one fixed answer whatever the
question: the 2-layer byte model has not learned to copy digits from the prompt or
from the tool's output in that budget. A third probe (2026-11-26) at
(2, 1) digits, 300 train and 50 validation tasks, 300 SFT updates (final SFT loss
0.37): validation exact match 0.00 again, tool-call rate 1.00, the same fixed call
(print(76*7)) and fixed answer (\\boxed{160}) for every question: shorter operands
did not help; the model ignores the question. Before the MT-GRPO claim is written, SFT
must reach 10-60% validation exact match (more updates or a bigger model); no claim
file uses this config yet.
"""

import pathlib

from mtrl.training.config import module_from_file

base = module_from_file(pathlib.Path(__file__).parent / "tool.py")


def get_config():
    c = base.get_config()
    c.data = dict(name="calc", path="", train_split="train", eval_split="validation",
                  test_split="test", num_train=512, num_eval=100, num_test=200,
                  options=dict(seed=0, digits=(4, 3), direct_fraction=0.3))
    c.env.max_output_chars = 200
    c.env.call_reward = 0.0
    c.rollout.num_turns = 2
    c.rollout.num_generations = 4
    c.rollout.termination_threshold = None
    c.rollout.max_new_tokens = 40
    c.rollout.max_context = 384
    c.reward.recipe = "env"
    c.sft = dict(c.sft.to_dict(), steps=100, batch_size=16, max_len=384)
    c.train.steps = 20
    c.train.tasks_per_step = 4
    c.train.eval_interval = 10
    c.train.save_interval = 10
    return c
