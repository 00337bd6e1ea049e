"""Two cooperating agents in CoMLRL's style (Liu et al. 2025): agent 1 writes a helper
`aux`, agent 2 writes the entry point, which may call it; MAGRPO over T = 2 turns with
level_feedback, on a CoopHumanEval-format JSONL file (HumanEval's fields).

    python -m mtrl.train --config=experiments/configs/coop_humaneval_magrpo.py \
        --config.model.hf_checkpoint=/path/to/model \
        --config.data.path=/path/to/coophumaneval.jsonl
"""

import pathlib

from mtrl.training.config import base_config, module_from_file

blocks = module_from_file(pathlib.Path(__file__).parent / "common" / "blocks.py")


def get_config():
    c = base_config()
    # checkpoint "": required on the command line (--config.model.hf_checkpoint=DIR).
    blocks.hf_checkpoint_model(c, checkpoint="", dtype="bfloat16")
    c.data.name = "coop_humaneval"
    c.data.path = ""  # required: CoopHumanEval-format .jsonl or .jsonl.gz
    # Disjoint slices: train, validation (chooses the best checkpoint), test (once).
    c.data.train_split = "test[:-20]"
    c.data.eval_split = "test[-20:-10]"
    c.data.test_split = "test[-10:]"
    c.data.num_eval = 10
    c.env.num_agents = 2
    c.env.templates = "default"
    c.env.feedback_style = "full"
    c.env.reward = "level"
    c.rollout.num_generations = 4
    c.rollout.joint_mode = "align"
    c.rollout.max_new_tokens = 384
    c.rollout.max_context = 2048
    c.rollout.termination_threshold = 3.5
    c.credit.estimator = "mean"
    c.loss.policy_loss = "reinforce"
    c.loss.aggregation = "seq-mean-token-sum"
    c.optim.learning_rate = 2e-6
    c.train.steps = 200
    c.train.tasks_per_step = 4
    c.sft.enabled = False
    return c
