"""The small trainer config many loop, config and environment tests start from: the
default's two-agent code task on a one-layer model, 20 short steps, no SFT."""

from mtrl.training.config import base_config

STEPS = 20


def small_config():
    c = base_config()
    c.model.overrides = dict(num_layers=1, hidden_size=32, intermediate_size=64, num_heads=2,
                             num_kv_heads=1, head_dim=16)
    c.data.num_train = 64
    c.data.num_eval = 2
    c.env.workers = 1
    c.rollout.num_generations = 2
    c.rollout.max_new_tokens = 12
    c.rollout.max_context = 256
    c.train.steps = STEPS
    c.train.tasks_per_step = 2
    c.train.eval_interval = STEPS
    c.train.save_interval = STEPS
    c.sft.enabled = False
    return c
