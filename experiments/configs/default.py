"""The embedded default: two agents learn, from scratch on a CPU, to write the integer
functions of the built-in family (mtrl.data.synthetic) over T = 2 turns.

Task: "Write f(x) with f(0) == 7." The helper writes aux(x), a term among x, 2*x,
3*x, 4*x, -x; main writes f(x, b=7) = aux(x) + b. One example cannot name the term,
so turn 1 is a guess; the second turn sees compact level_feedback with the first
hidden test, the difference probe `f(1) - f(0) == 3`, whose number is the term's
coefficient. Held out: unseen (term, offset) pairs.

Recipe: SFT warm start (first-turn demonstrations alone for 200 updates, so main
learns to copy the example's value, then revisions after a wrong first attempt
mixed in), then MAGRPO (REINFORCE with tree advantages) on the rows whose advantage
is non-zero (dynamic sampling), held-out evaluation every 10 steps, best checkpoint.

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
    # The helper's revisions: one per train task (half its rows), else its SFT loss is
    # the turn-1 term guess and revision answers stay malformed; main's: 30%.
    c.sft = dict(c.sft.to_dict(), steps=350, first_turn_steps=200, schedule="constant",
                 revision_fraction=(1.0, 0.3), max_len=320)
    c.rollout.max_context = 320  # a revision row is ~270 tokens
    c.train.dynamic_sampling = True
    c.train.eval_interval = 10
    c.train.steps = 200
    c.train.max_minutes = 14.0  # the loop's cap; SFT and the final evaluation fit in 15
    c.optim.learning_rate = 2e-4
    return c
