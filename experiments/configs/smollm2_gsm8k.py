"""SmolLM2-135M-Instruct, one agent, multi-turn GSM8K with UFO's unary "try again"
feedback over T = 3 attempts: the episode ends at the first correct \\boxed{} answer,
UFO credit (γ^t for a success at attempt t, minus λ times the share of repeated
answers), PPO clipping and a small KL to the base model, on the learnable band.

    python -m tools.get_smollm2 --out models/smollm2-135m-instruct
    python -m tools.select_learnable_tasks --config=experiments/configs/smollm2_gsm8k.py \
        --samples=4 --num_tasks=200 --out=models/smollm2_gsm8k_learnable.json
    python -m mtrl.train --config=experiments/configs/smollm2_gsm8k.py

Splits: train = GSM8K train[500:] filtered to the learnable band (the base model's
first-attempt solve rate neither 0 nor 1; data.options.train_ids_file, "" trains on
every problem), validation = train[:500] (chooses the best checkpoint; data.num_eval
problems), test = GSM8K test (once, at the end; data.num_test problems).
Sized for a CPU (2 problems x G = 4 x T = 3, 192 new tokens, tree packing, full remat);
on a GPU raise tasks_per_step, max_new_tokens and use model.dtype=bfloat16.
"""

import pathlib

from mtrl.training.config import base_config, module_from_file

blocks = module_from_file(pathlib.Path(__file__).parent / "common" / "blocks.py")


def get_config():
    c = base_config()
    # checkpoint: tools/get_smollm2.py --out; bfloat16 is slower than float32 on CPU XLA.
    blocks.hf_checkpoint_model(c, checkpoint="models/smollm2-135m-instruct", dtype="float32")
    blocks.gsm8k_data(c)
    blocks.real_model_cpu_run(c)
    blocks.small_model_grpo(c, estimator="ufo")
    c.chat.system_prompts = ("You solve grade-school math problems. Reason step by step, "
                             "then give the final number as \\boxed{answer}.",)
    c.data.num_eval = 16
    c.data.num_test = 50
    # Every question (a BPE context holds the longest), filtered to the learnable band.
    c.data.options = {"train_ids_file": "models/smollm2_gsm8k_learnable.json"}
    c.env.name = "math"
    c.env.templates = "default"
    c.env.feedback_mode = "unary"
    c.env.history_mode = "full"
    c.rollout.num_turns = 3
    c.rollout.max_new_tokens = 192
    c.rollout.max_context = 1024
    c.credit.ufo_gamma = 0.9
    c.credit.ufo_penalty = 0.5
    c.sft.enabled = False
    return c
