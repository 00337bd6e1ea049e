"""The embedded default: two agents learn, from scratch on a CPU, to write the integer
functions of the built-in family (mtrl.data.synthetic) over T = 2 turns.

Task: "Write f(x) with f(0) == 7." The helper writes aux(x, k) = k*x with k among
1, 2, 3, 4, -1; main writes f(x, b=7) = aux(x) + b. One example cannot name the term,
so turn 1 is a guess; the second turn sees compact level_feedback ending with the
first hidden test, the difference probe `f(1) - f(0) == 3`, whose number is k.
Held out: unseen (term, offset) pairs.

SFT teacher: the helper always opens with k = 1 and, in 60% of its revisions,
ignores the feedback and resubmits it (sft.first_guess, sft.resubmit_fraction): a
model that mostly does not use feedback, as SFT'd LLMs often do. SFT: the helper
first trains on the true revisions alone (learns to copy k from the probe), main on
first-turn answers alone (learns to copy b from the example), then both on all
their rows. Held-out success after SFT is ~0.15 (turn 1 = turn 2: greedy
resubmits); RL (MAGRPO on rows with a non-zero advantage, dynamic sampling) has to
make the helper use the feedback. Held-out evaluation every 10 steps, best checkpoint.

    python -m mtrl.train --config=experiments/configs/default.py --workdir=/tmp/mtrl

Measured status: BENCHMARKS.md ("The embedded default experiment") and BUILD.md.
"""

from mtrl.training.config import base_config


def get_config():
    c = base_config()
    c.model.overrides = dict(num_layers=2)  # half the tiny preset: 2x cheaper steps
    c.data.num_train = 1000  # the family has 1,200 distinct train tasks
    c.data.options = dict(probe_form="difference", heldout_by="function", offset_range=(0, 9),
                          terms=("x", "2x", "3x", "4x", "neg"), probe_xs=(1,),
                          test_xs=(-3, -2, -1, 1, 2, 3, 4))
    # Revisions: one per train task for the helper (its turn-2 skill), 30% for main.
    # First phase, 200 updates: the helper's true revisions (copy k from the probe),
    # main's first turns (copy b from the example); then all rows, the teacher's
    # resubmissions (60% of the helper's revisions) included.
    c.sft = dict(c.sft.to_dict(), steps=350, first_phase_steps=200, schedule="constant",
                 revision_fraction=(1.0, 0.3), max_len=256, first_guess="x",
                 resubmit_fraction=(0.6, 0.0), first_phase=("revisions", "first_turn"))
    c.rollout.max_context = 256  # main's revision rows, the longest, are <= 253 tokens
    c.train.dynamic_sampling = True
    c.train.eval_interval = 10
    c.train.steps = 200
    c.train.max_minutes = 14.0  # the loop's cap; SFT and the final evaluation fit in 15
    c.optim.learning_rate = 2e-4
    return c
