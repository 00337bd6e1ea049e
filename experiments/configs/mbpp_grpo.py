"""Single-agent multi-turn GRPO on MBPP (sanitized) with a local Hugging Face checkpoint.

    python -m mtrl.train --config=experiments/configs/mbpp_grpo.py \
        --config.model.hf_checkpoint=/path/to/model --config.data.path=../shared/data/mbpp

Standard MBPP splits by task id: train 601-974, validation 511-600 (chooses the best
checkpoint), test 11-510 (evaluated once at the end, at most data.num_test tasks).
"""

import pathlib

from mtrl.training.config import base_config, module_from_file

blocks = module_from_file(pathlib.Path(__file__).parent / "common" / "blocks.py")


def get_config():
    c = base_config()
    # checkpoint "": required on the command line (--config.model.hf_checkpoint=DIR).
    blocks.hf_checkpoint_model(c, checkpoint="", dtype="bfloat16")
    blocks.code_grpo(c, kl_coef=0.001)
    blocks.mbpp_data(c)
    blocks.real_model_gpu_run(c)
    c.data.num_eval = 43
    c.data.num_test = 500
    return c
