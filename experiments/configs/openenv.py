"""Bring your own environment: train on any environment served over OpenEnv's protocol
(the openenv package; mtrl/envs/openenv), here mtrl's own sandboxed code environment served
as an OpenEnv server, with the tiny byte model, one agent, GRPO over T = 2 turns.

    pip install -e ".[openenv]"
    python -m mtrl.serve_openenv --suite=intfn --port=8000 &
    python -m mtrl.train --config=experiments/configs/openenv.py

The server is $MTRL_OPENENV_URL (default http://127.0.0.1:8000), or
--config.env.url=... (and data.options.server, the same URL); nothing here is
particular to mtrl's server:
- the action field that carries the completion, and the observation field shown,
  are the only string fields of the server's schema and replies (env.action_key,
  env.observation_key name them when there are several);
- tasks are the server's own task list, its train, validation and test splits
  (OpenEnv's task API); for a server without one, set data.options.server="" to
  play disjoint seed ranges instead (data.options.seed_base);
- a step solves its task when the server says so (its metadata's `success`, as
  mtrl's server does); a server that does not is judged by env.success_reward
  (default 1.0, a 0/1 reward), with a warning when no reward reaches it;
- env.concurrency sessions at once: at most the server's max sessions (mtrl's
  server: --max_sessions, 4 by default; a refusal names both fields).
No SFT: the suite has no demonstrations.
"""

import os

from mtrl.training.config import base_config


def get_config():
    c = base_config()
    c.model.overrides = dict(num_layers=2)
    url = os.environ.get("MTRL_OPENENV_URL", "http://127.0.0.1:8000")
    c.data = dict(name="openenv", path="", train_split="train", eval_split="heldout",
                  test_split="test", num_train=64, num_eval=16, num_test=16,
                  options=dict(server=url))
    c.env = dict(c.env.to_dict(), name="openenv", num_agents=1, url=url, timeout_s=30.0,
                 retries=2, concurrency=4)
    c.rollout = dict(c.rollout.to_dict(), num_turns=2, num_generations=4, max_new_tokens=64,
                     max_context=768)
    c.credit = dict(c.credit.to_dict(), estimator="grpo")
    c.sft.enabled = False
    c.train = dict(c.train.to_dict(), steps=20, tasks_per_step=4, eval_interval=5,
                   save_interval=5)
    return c
