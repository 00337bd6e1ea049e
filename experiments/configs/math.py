"""Multi-turn math on GSM8K with UFO's unary "try again" feedback, the tiny model and
the byte tokenizer (a small, CPU-sized configuration of the math environment).

Turn 1 answers the question (final answer in \\boxed{n}); a wrong answer is answered
"Try again." (env.feedback_mode=unary; correctness and plain are the other modes)
and the episode ends at the first correct answer. Credit: UFO (γ^t for a correct
answer at attempt t, minus λ times the share of repeated answers), selectable like
every estimator:

    python -m mtrl.train --config=experiments/configs/math.py --workdir=/tmp/mtrl-math
    python -m mtrl.train --config=experiments/configs/math.py --config.credit.estimator=igpo
    python -m mtrl.train --config=experiments/configs/math.py --config.reward.recipe=recipe
    python -m mtrl.train --config=experiments/configs/math.py --config.filters.void_turns=True
    python -m mtrl.train --config=experiments/configs/math.py --config.env.num_agents=2

Splits: train = GSM8K train[500:], validation = train[:500] (chooses the best
checkpoint), test = GSM8K test (evaluated once); questions of at most 300 characters
so prompts fit the byte-level context. A ~1M-parameter byte model does not solve
GSM8K: this configuration exercises the environment and the methods end to end; the
real-model results come in their own issue.
"""

from mtrl.training.config import base_config


def get_config():
    c = base_config()
    c.model.overrides = dict(num_layers=2)
    c.data.name = "gsm8k"
    c.data.path = "../shared/data/gsm8k"
    c.data.train_split = "train[500:]"
    c.data.eval_split = "train[:500]"
    c.data.test_split = "test"
    c.data.num_train = 7000
    c.data.num_eval = 50
    c.data.num_test = 200
    c.data.options = dict(max_question_chars=300)
    c.env.name = "math"
    c.env.num_agents = 1
    c.env.feedback_mode = "unary"
    c.env.history_mode = "full"
    c.env.templates = "default"
    c.rollout.num_turns = 3
    c.rollout.num_generations = 4
    # A node whose every joint action solved the task stops expanding (its children
    # would all be played after the end and dropped from the loss).
    c.rollout.termination_threshold = 0.99
    c.rollout.max_new_tokens = 96
    # Prompt <= ~400 bytes, + 3 turns of 96 + feedback (two agents: teammates answers);
    # the generator cannot continue a history that fills the context, so leave room.
    c.rollout.max_context = 1024
    c.credit.estimator = "ufo"
    c.credit.ufo_gamma = 0.9
    c.credit.ufo_penalty = 0.5
    c.train.steps = 50
    c.train.tasks_per_step = 2
    c.train.eval_interval = 25
    c.train.save_interval = 25
    c.sft = dict(c.sft.to_dict(), steps=200, batch_size=16, max_len=768,
                 revision_fraction=0.0)
    c.optim.learning_rate = 1e-4
    return c
