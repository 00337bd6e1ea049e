"""Single-agent multi-turn GRPO on MBPP (sanitized) with a local Hugging Face checkpoint.

    python -m mtrl.train --config=experiments/configs/mbpp_grpo.py \
        --config.model.hf_checkpoint=/path/to/model --config.data.path=../shared/data/mbpp

Standard MBPP splits by task id: train 601-974, validation 511-600 (chooses the best
checkpoint), test 11-510 (evaluated once at the end, at most data.num_test tasks).
"""

from mtrl.training.config import base_config


def get_config():
    c = base_config()
    c.model.preset = ""  # no preset: the weights come from hf_checkpoint
    c.model.hf_checkpoint = ""  # required: a local directory (config.json + safetensors)
    c.model.dtype = "bfloat16"
    c.data.name = "mbpp_sanitized"
    c.data.path = "../shared/data/mbpp"
    c.data.train_split = "train"
    c.data.eval_split = "validation"
    c.data.num_eval = 43
    c.data.test_split = "test"
    c.data.num_test = 500
    c.env.num_agents = 1
    c.env.templates = "default"
    c.env.feedback_style = "full"
    c.env.reward = "pass_rate"
    c.rollout.num_generations = 8
    c.rollout.max_new_tokens = 512
    c.rollout.max_context = 2048
    c.rollout.termination_threshold = 0.9
    c.credit.estimator = "grpo"
    c.loss.policy_loss = "ppo"
    c.loss.aggregation = "seq-mean-token-mean"
    c.loss.kl_coef = 0.001
    c.optim.learning_rate = 1e-6
    c.train.steps = 200
    c.train.tasks_per_step = 4
    c.train.eval_samples = 4
    c.sft.enabled = False
    return c
