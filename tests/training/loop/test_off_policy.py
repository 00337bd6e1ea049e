"""train.off_policy = 1: step k+1's tree grows in the background while step k's update
runs. Two steps of the trainer (code environment, PPO with the sampler's log-probs as
π_old): the first tree is made on demand from the same parameters and key as the
on-policy run's (so its update is identical), the second is one update stale and its
importance ratio departs from 1, while the on-policy run's second update stays at ratio 1."""

import json

import pytest

from mtrl.training.loop.trainer import Trainer
from tests.training.loop.small_run import small_config


def _two_steps(tmp_path, off_policy):
    c = small_config()
    c.train.steps = c.train.eval_interval = c.train.save_interval = 2
    c.train.off_policy = off_policy
    # Every completion of a random policy fails: the recipe's -1 outcome with a raw
    # baseline gives non-zero advantages, and a large step moves the policy visibly.
    c.reward.recipe = "recipe"
    c.credit.baseline = "raw"
    c.loss.policy_loss = "ppo"
    c.optim.learning_rate = 1e-2
    c.optim.warmup_steps = 0
    trainer = Trainer(c, tmp_path, show_progress=False)
    try:
        assert (trainer.ahead is not None) == bool(off_policy)
        trainer.run()
    finally:
        trainer.close()
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r for r in records if r.get("step", 0) >= 1 and "reward_mean" in r}


def test_one_step_off_policy_trains_and_reports_staleness(tmp_path):
    on = _two_steps(tmp_path / "on", 0)
    off = _two_steps(tmp_path / "off", 1)
    assert sorted(off) == [1, 2] and sorted(on) == [1, 2]
    for step in (1, 2):
        assert off[step]["finite"] == 1.0 and abs(off[step]["loss"]) < 1e6
        assert "off_policy/staleness" not in on[step]
    assert [off[s]["off_policy/staleness"] for s in (1, 2)] == [0.0, 1.0]
    # Step 1 is the same update in both modes (same tree, same parameters).
    assert off[1]["loss"] == pytest.approx(on[1]["loss"], rel=1e-6, abs=1e-7)
    assert off[1]["reward_mean"] == on[1]["reward_mean"]
    # Step 2: the on-policy tree was sampled by the parameters being trained (ratio 1);
    # the off-policy tree by those before step 1's update, so π_θ/π_old moved.
    assert on[2]["approx_kl"] < 1e-5
    assert off[2]["approx_kl"] > 10 * max(on[2]["approx_kl"], 1e-6)
    assert off[2]["time/rollout_wait_s"] >= 0.0


def test_off_policy_must_be_zero_or_one():
    from mtrl.training.run.sections import TrainConfig
    with pytest.raises(ValueError, match="off_policy"):
        TrainConfig(off_policy=2)
    assert TrainConfig().off_policy == 0
