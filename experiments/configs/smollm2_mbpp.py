"""SmolLM2-135M-Instruct, one agent, multi-turn MBPP (sanitized) with level_feedback over
T = 2 turns: GRPO with PPO clipping and a small KL to the base model, on the tasks of the
learnable band (base-model pass rate neither 0 nor 1). README "Real models":

    python -m tools.get_smollm2 --out models/smollm2-135m-instruct
    python -m tools.select_learnable_tasks --config=experiments/configs/smollm2_mbpp.py \
        --samples=4 --num_tasks=72 --band=reward --out=models/smollm2_mbpp_learnable.json
    python -m mtrl.train --config=experiments/configs/smollm2_mbpp.py

Splits (standard MBPP task ids): train 601-974 filtered to the learnable band, here
the tasks whose sampled shaped rewards differ (data.options.train_ids_file; "" trains
on every train task), validation 511-600 (chooses the best checkpoint), test 11-510
(once, at the end; data.num_test tasks).
Sized for a CPU (2 tasks x G = 4 x T = 2, 128 new tokens, tree packing, full remat);
on a GPU raise tasks_per_step, max_new_tokens and use model.dtype=bfloat16.
"""

import pathlib

from mtrl.training.config import base_config, module_from_file

blocks = module_from_file(pathlib.Path(__file__).parent / "common" / "blocks.py")


def get_config():
    c = base_config()
    # checkpoint: tools/get_smollm2.py --out; bfloat16 is slower than float32 on CPU XLA.
    blocks.hf_checkpoint_model(c, checkpoint="models/smollm2-135m-instruct", dtype="float32")
    blocks.code_grpo(c, kl_coef=0.01)
    blocks.mbpp_data(c)
    blocks.real_model_cpu_run(c)
    # tokenizer "byte" + a checkpoint with tokenizer files: the checkpoint's tokenizer.
    c.chat.system_prompts = ("You are a careful Python programmer. Answer with one "
                             "```python code block.",)
    c.data.num_eval = 8
    c.data.num_test = 20
    c.data.options = {"train_ids_file": "models/smollm2_mbpp_learnable.json"}
    # Level reward with small shaping: +0.2 for defining the asked-for function with a
    # return, +0.1 if it compiles, +1.0 x the share of tests passed (the outcome
    # dominates: 0.3 < 1.0). With the pass rate alone 70 of the first 72 train tasks
    # give this model no signal at all (BENCHMARKS.md); a wrong function name is its
    # most common failure, and the feedback turn names the missing function.
    c.env.reward = "level"
    c.env.reward_points = {"main_defined": 0.2, "syntax": 0.1}
    c.env.feedback_mode = "level_feedback"
    c.env.sandbox_slice = 1
    c.rollout.num_turns = 2
    c.rollout.max_new_tokens = 128
    c.rollout.max_context = 512
    return c
