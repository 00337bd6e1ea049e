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

import pathlib

from mtrl.training.config import base_config, module_from_file

blocks = module_from_file(pathlib.Path(__file__).parent / "common" / "blocks.py")


def get_config():
    c = base_config()
    blocks.small_cpu_run(c, sft_max_len=768)
    blocks.gsm8k_data(c)
    c.data.num_eval = 50
    c.env.name = "math"
    c.env.feedback_mode = "unary"
    c.env.history_mode = "full"
    c.rollout.max_new_tokens = 96
    # Prompt <= ~400 bytes, + 3 turns of 96 + feedback (two agents: teammates answers);
    # the generator cannot continue a history that fills the context, so leave room.
    c.rollout.max_context = 1024
    c.credit.estimator = "ufo"
    c.credit.ufo_gamma = 0.9
    c.credit.ufo_penalty = 0.5
    return c
