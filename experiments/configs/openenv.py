"""Bring your own environment: train on any environment served over OpenEnv's protocol
(openenv-core; mtrl/envs/openenv), here mtrl's own sandboxed code environment served
as an OpenEnv server, with the tiny byte model, one agent, GRPO over T = 2 turns.

    pip install -e ".[openenv]"
    python -m mtrl.serve_openenv --suite=intfn --port=8000 &
    python -m mtrl.train --config=experiments/configs/openenv.py

The server is $MTRL_OPENENV_URL (default http://127.0.0.1:8000), or
--config.env.url=...; the action field that carries the completion is read
from the server's schema (env.action_key names it when the action has several
string fields). Tasks are the servers' seeds: disjoint train, validation and test
seed ranges (data.options.seed_base). No SFT: the suite has no demonstrations.
A step solves its task when its reward reaches env.success_reward: 2.09 is
the served code environment's level reward for a program passing every test (2.1),
less rounding; set it for another server's rewards.
"""

import os

from mtrl.training.config import base_config


def get_config():
    c = base_config()
    c.model.overrides = dict(num_layers=2)
    c.data = dict(name="openenv", path="", train_split="train", eval_split="heldout",
                  test_split="test", num_train=64, num_eval=16, num_test=16,
                  options=dict(seed_base=0))
    c.env = dict(c.env.to_dict(), name="openenv", num_agents=1,
                 url=os.environ.get("MTRL_OPENENV_URL", "http://127.0.0.1:8000"),
                 observation_key="text", success_reward=2.09, timeout_s=30.0,
                 retries=2, concurrency=4)
    c.rollout = dict(c.rollout.to_dict(), num_turns=2, num_generations=4, max_new_tokens=64,
                     max_context=768)
    c.credit = dict(c.credit.to_dict(), estimator="grpo")
    c.sft.enabled = False
    c.train = dict(c.train.to_dict(), steps=20, tasks_per_step=4, eval_interval=5,
                   save_interval=5)
    return c
