"""One RL step of a tiny model on an environment served over OpenEnv's protocol (the
toy server, written against openenv-core alone, on 127.0.0.1): the trainer's rollouts,
update and evaluations all go through the server, and the logged rewards are the
server's."""

import json

import pytest

pytest.importorskip("openenv.core")

from mtrl.training.config import module_from_file
from mtrl.training.loop.trainer import Trainer
from tests.conftest import ROOT


def toy_config(url: str):
    c = module_from_file(ROOT / "experiments" / "configs" / "openenv.py").get_config()
    c.env.url, c.env.concurrency, c.env.timeout_s = url, 4, 30.0
    c.data.options = dict(seed_base=0)  # the toy has no task list: seeds
    c.model.overrides = dict(num_layers=1, hidden_size=32, intermediate_size=64,
                             num_heads=2, num_kv_heads=1, head_dim=16)
    c.data.num_train, c.data.num_eval, c.data.num_test = 4, 2, 2
    c.rollout.num_generations, c.rollout.max_new_tokens, c.rollout.max_context = 2, 8, 256
    c.train.steps, c.train.tasks_per_step = 1, 2
    c.train.eval_interval = c.train.save_interval = 1
    return c


def test_one_rl_step_on_an_openenv_server(tmp_path, toy_url):
    trainer = Trainer(toy_config(toy_url), tmp_path, show_progress=False)
    try:
        assert trainer.c.env.action_key == "message"  # from the server's /schema
        result = trainer.run()
    finally:
        trainer.close()
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text()
               .splitlines()]
    step = records[-1]
    assert step["step"] == 1 and "skipped_update" not in step
    assert step["train_step_compiles"] >= 1
    # The toy's reward is -len(message)/100 unless the number is said: a byte model's
    # messages of up to 8 bytes give rewards in [-0.08, 0), or 1.0; never a default 0.
    assert -0.08 <= step["reward_mean"] <= 1.0 and step["reward_mean"] != 0.0
    assert result["steps"] == 1 and result["updates_run"] == 1
    assert 0.0 <= result["test_success"] <= 1.0
    transcript = next((tmp_path / "transcripts").glob("heldout_step*.txt")).read_text()
    assert "=== task seed/" in transcript and "--- observation ---\nNo. Say " in transcript
    assert "--- task prompt ---\nSay the number " in transcript  # the reset observation
