"""Compile counts stay bounded over a 20-step training loop: the sampler's programs are
compiled for a handful of buckets in the first steps and then reused, and the train
step compiles once (rows and lengths are padded to fixed buckets)."""

import json

from mtrl.training.config import base_config
from mtrl.training.loop.trainer import Trainer

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


def test_compiles_stay_bounded_over_twenty_steps(tmp_path):
    trainer = Trainer(small_config(), tmp_path, show_progress=False)
    try:
        trainer.run()
    finally:
        trainer.close()
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    by_step = {r["step"]: r for r in records if "sampler_compiles" in r}
    assert sorted(by_step) == list(range(1, STEPS + 1))
    sampler = [by_step[s]["sampler_compiles"] for s in range(1, STEPS + 1)]
    train = [by_step[s]["train_step_compiles"] for s in range(1, STEPS + 1)]
    # Prompt and completion lengths differ from step to step (so do the sampler's
    # chunk and cache buckets), yet a handful of programs serve the 80 sampler calls
    # (20 steps x 2 turns x 2 agents): compiles are per bucket, not per call.
    assert 3 <= sampler[-1] <= 12, sampler
    assert sampler == sorted(sampler)
    # The train step sees one shape (rows and lengths padded to fixed buckets).
    assert train == [1.0] * STEPS, train
