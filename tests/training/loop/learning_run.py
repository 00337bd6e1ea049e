"""What the learning tests share (test_rl_learns.py, test_rl_learns_code.py): the tiny
byte model, a suite's three held-out splits, "section.field" overrides typed as the
trainer types them, and one seeded trainer run with fixed sampler shapes."""

from __future__ import annotations

# A 2-layer 64-wide byte model per agent: small enough for CI, large enough to copy.
TINY_BYTE_MODEL = dict(num_layers=2, hidden_size=64, intermediate_size=128, num_heads=2,
                       num_kv_heads=1, head_dim=32)


def learning_base(seed: int, suite: str, sizes: dict):
    """base_config() with the tiny model, `suite`'s train / validation / test splits of
    `sizes` (validation chooses the checkpoint, test is read once), no export and no
    warmup; the caller sets the environment, rollout, SFT and RL."""
    from mtrl.training.config import base_config
    c = base_config()
    c.seed = seed
    c.model.overrides = dict(TINY_BYTE_MODEL)
    c.data = dict(c.data.to_dict(), name=suite, train_split="train", eval_split="validation",
                  test_split="test", num_eval=sizes["validation"], num_test=sizes["test"])
    c.train.export_best = False
    c.optim.warmup_steps = 0
    return c


def with_overrides(c, overrides: dict):
    """c with {"section.field": value} set through the trainer's own flag typing."""
    from mtrl.training.config.overrides import apply_overrides
    return apply_overrides(c, [f"{key}={value}" for key, value in overrides.items()])


def run_trainer(config, workdir, sampler_buckets: dict) -> dict:
    """One whole run (SFT, RL, validation, test) of `config` in `workdir`: its summary."""
    from mtrl.sampling import BucketPolicy
    from mtrl.training.loop.trainer import Trainer
    trainer = Trainer(config, workdir, show_progress=False,
                      sampler_buckets=BucketPolicy(**sampler_buckets))
    try:
        return trainer.run()
    finally:
        trainer.close()
