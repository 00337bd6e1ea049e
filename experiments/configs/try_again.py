"""UFO's setting on the built-in family: one agent, unary "try again" feedback, two
attempts, where the first attempt cannot know the answer and the second can only use
the fact that the first failed.

Task: "Write f(x) with f(0) == 47" where f is x + b or -x + b (two terms, b in
-99..99). The example fixes b but not the term, so turn 1 is a coin flip; after a
failed attempt the environment says only that the tests did not pass
(env.feedback_mode "passed") and the agent sees its own attempt (history "full"):
switching terms solves every task, repeating the attempt solves none. Sequential
success within two attempts (Succ@2) of a policy that switches is 1.0; two independent
single-turn samples solve at most 0.75 (Pass@2 of a uniform guess; a sharpened guess
does worse). Held out: offsets (heldout_by="offset", iid_test): validation and test
hold out offsets no train task has, so every prompt and every turn-2 context a test
task shows is new text, and its answer's b is a number no train answer wrote.

SFT teacher: first turns (the true function: a policy fit to them guesses the term),
400 updates on first turns alone (copying an unseen b takes ~200-400 updates, as the
default's main), then 150 on first turns and revisions, where half of the revisions
resubmit the failed attempt (a teacher that ignores feedback, as SFT'd LLMs often do:
UFO's observation that models repeat their answers). RL (credit "ufo": gamma^t for
the first success, a penalty for repeating an attempt; episodes end on success) has to
teach the switch. experiments/claims/try_again_succ_vs_pass.py compares it against
single-turn RL at equal samples.

    python -m mtrl.train --config=experiments/configs/try_again.py --workdir=/tmp/mtrl_try_again
"""

from mtrl.training.config import base_config


def get_config():
    c = base_config()
    c.model.overrides = dict(num_layers=2)
    c.env.num_agents = 1
    c.data.num_train = 1000
    c.data.options = dict(terms=("x", "neg"), offset_range=(-99, 99), heldout_by="offset",
                          heldout_offset_fraction=0.1, iid_test=True)
    c.data.test_split = "test"
    c.env.feedback_mode = "passed"
    c.env.history_mode = "full"
    c.env.end_on_success = True
    c.credit.estimator = "ufo"
    c.rollout.num_turns = 2
    c.rollout.num_generations = 4  # 4 + 16 = 20 samples per task (fewer once one succeeds)
    c.rollout.max_context = 192
    c.sft = dict(c.sft.to_dict(), steps=550, first_phase_steps=400, schedule="constant",
                 first_phase="first_turn", revision_fraction=0.5, resubmit_fraction=0.5,
                 max_len=192)
    c.train.drop_zero_advantage = True
    c.train.eval_interval = 10
    c.train.steps = 20
    c.train.eval_samples = 2  # sampled episodes per task at evaluation (test_pass@2)
    c.optim.learning_rate = 2e-4
    return c
