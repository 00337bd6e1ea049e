"""The embedded default: two agents learn, from scratch on a CPU, to write the integer
functions of the built-in family (mtrl.data.synthetic) over T = 2 turns.

Task: "Write f(x) with f(0) == 7." The helper writes aux(x, k) = k*x with k in
-99..99, main writes f(x, b=7) = aux(x) + b with b in -99..99. One example cannot name
k, so turn 1 is a guess; turn 2 starts a fresh context holding compact level_feedback
alone (history_mode "feedback"), which ends with the first hidden test, the
difference probe `f(1) - f(0) == 3` whose number is k, and the revision instruction
(for main it restates the task). Held out: values (heldout_by="values"): validation
and test each hold out 10% of the k values and 10% of the b values, and no train task
has a held-out value, so every text a test task shows an agent is new
(tests/data/synthetic/test_default_disjoint.py).

SFT teacher: the helper always opens with k = 1 and, in 70% of its revisions,
ignores the feedback and resubmits it (sft.first_guess, sft.resubmit_fraction): a
model that mostly does not use feedback, as SFT'd LLMs often do. SFT: the helper
first trains on the true revisions alone (learns to copy k from the probe), main on
first-turn answers alone (learns to copy b from the example), then both on all
their rows. After each phase, each is checked on held-out rows of its first-phase
kind (the helper after its first phase only): a warm start that cannot copy gets
more updates of that phase, then stops the run in one line instead of entering an
RL that has no signal to learn from. After
SFT, greedy decoding mostly resubmits, so held-out success sits in the low band;
RL (MAGRPO on rows with a non-zero advantage, dynamic sampling) has to make the
helper use the feedback it can already read. Held-out evaluation
every 10 steps, best checkpoint; the test split and the ood_test split (coefficients
123, -127, 131 and offsets 100-130: values outside the training ranges) are evaluated
after SFT, for the best checkpoint and for the last.

Why k as wide as b: with k over -19..19 (experiments/configs/default_narrow_k.py, the
default until 2026-11-28) only ~31 distinct k occur in training, a table of answers
fits the helper's SFT as well as copying does, and on four seeds of five the helper
copied no unseen k after SFT; RL then had nothing to sharpen (test 0.00 -> 0.00 on
three of five seeds). With ~158 distinct k, copying is the cheaper fit
(experiments/default_narrow_k/copy_check.json, experiments/default_wide_k_pilot/).

    python -m mtrl.train --config=experiments/configs/default.py --workdir=/tmp/mtrl

Measured: RESULTS.md (experiments/default_unseen_values/); design notes: docs/default.md.
"""

from mtrl.training.config import base_config


def get_config():
    c = base_config()
    c.model.overrides = dict(num_layers=2)  # half the tiny preset: 2x cheaper steps
    # Every distinct train task: 30 train functions x 30 tasks (the iid test's 10
    # functions left train; before it, 1,000 of 1,200).
    c.data.num_train = 900
    # Values, not names: the helper's k and main's b both range over -99..99;
    # validation holds out 10% of the coefficients and 10% of the offsets (spread over
    # each range), the test split another 10% of each, and no train task has a
    # held-out value. So every text a test task shows an agent (its prompt, the failing
    # probe that names k, the revision instruction with b) is new, and its right answers
    # are numbers no agent wrote in training: using the feedback means copying digits.
    c.data.options = dict(probe_form="difference", heldout_by="values",
                          coefficient_range=(-99, 99), offset_range=(-99, 99),
                          heldout_value_fraction=0.1, probe_xs=(1,),
                          test_xs=(-3, -2, -1, 1, 2, 3, 4), iid_test=True,
                          test_terms=("123x", "neg127x", "131x"), test_offset_range=(100, 130))
    # ood_test: coefficients and offsets outside the training ranges (three-digit
    # numbers, a length no agent copied there): extrapolation, reported
    # beside the test split. Both are evaluated after SFT and once for the checkpoint
    # validation chose.
    c.data.test_split = "test"
    # Revisions: one per train task (whose term is not the teacher's guess) for both.
    # Main's turn-2 prompt (feedback alone) is a format its first turns never show;
    # with 30% revision rows its revisions came out garbled on one seed of two
    # (~30 revision batches in the 150 mixed updates).
    # First phase, 400 updates: the helper's true revisions (copy k from the probe:
    # -1 is read within ~100 updates, the digits after 175-400+ depending on the seed),
    # main's first turns (copy b from the example, ~200); then 150 on all rows, the
    # teacher's resubmissions (70% of the helper's revisions) included.
    # Checked after each phase (sft/warm_start_check.py; the helper's revisions not
    # after the mixed phase, which teaches resubmitting them): greedy decoding must
    # reproduce >= 50% of the agent's held-out first-phase rows (the validation tasks'
    # ~100 first turns or ~100 true revisions: values no train row holds in that role,
    # so only copying reproduces them), else up to 4 x 100 more updates of that phase,
    # then the run stops. Without copying the share is ~0 (main after SFT on narrow-k
    # seed 1: 0.00 of 100, and RL gained nothing); good warm starts' main reproduced
    # 0.81-1.00 (experiments/default_narrow_k/copy_check.json, default_wide_k_pilot/).
    # A helper that passed at 0.25 left RL without signal (seed 9: test +0.12 at best,
    # experiments/default_ten_seeds/pilot_seed9.json), and its digits come after
    # 175-500+ updates, hence the higher bar and more continuations. docs/default.md.
    c.sft = dict(c.sft.to_dict(), steps=550, first_phase_steps=400, schedule="constant",
                 revision_fraction=(1.0, 1.0), max_len=192, first_guess="x",
                 resubmit_fraction=(0.7, 0.0), first_phase=("revisions", "first_turn"),
                 check_min_exact=0.5, check_extra_steps=100, check_rounds=4)
    # Turn 2 sees the feedback alone (a fresh context: the revision instruction
    # restates the task for main, the failing probe names k for the helper).
    c.env.history_mode = "feedback"
    c.rollout.max_context = 192  # main's turn-2 prompt is ~105 tokens, + 48 new
    c.train.drop_zero_advantage = True
    c.train.eval_interval = 10
    # 100 RL steps: in the five-seed record at 200 (experiments/default_unseen_values/,
    # per-step curves in seeds_0_4.json) the best validation by step 100 was 0.74-0.90
    # against 0.81-0.97 by step 200, from 0.00-0.08 after SFT; the second hundred steps
    # cost about a third of the run's time.
    c.train.steps = 100
    # A budget, not a cap: every planned step runs; the run warns when it takes longer.
    c.train.budget_minutes = 10.0
    c.optim.learning_rate = 2e-4
    return c
