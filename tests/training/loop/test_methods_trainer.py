"""The trainer trains with the configured method: two steps end to end through the
code environment for a path estimator with the turn-level ratio, for REFUEL's pairs
with the zero-advantage filter and two minibatches, and for the KL in the reward."""

import json

import pytest

from mtrl.training.loop.trainer import Trainer
from tests.training.loop.small_run import small_config


@pytest.mark.parametrize("credit, loss", [
    ({"estimator": "ufo"}, {"policy_loss": "turn_ratio", "aggregation": "token-mean"}),
    ({"estimator": "magrpo", "baseline": "raw"}, {"policy_loss": "refuel"}),
    ({"estimator": "rloo"}, {"kl_in": "reward", "kl_coef": 0.1, "kl_estimator": "k1"}),
])
def test_two_steps_with_the_method(tmp_path, credit, loss):
    c = small_config()
    if loss.get("kl_in") == "reward":  # return penalties, void filter and recipe together
        c.filters.update({"overlong_cache": 4, "void_turns": True})
        c.reward.recipe = "recipe"
    c.train.steps = c.train.eval_interval = c.train.save_interval = 2
    c.train.minibatches = 2
    c.train.drop_zero_advantage = loss.get("policy_loss") == "refuel"
    c.credit.update(credit)
    c.loss.update(loss)
    c.env.end_on_success = credit["estimator"] == "ufo"  # UFO's first success ends it
    trainer = Trainer(c, tmp_path, show_progress=False)
    try:
        assert trainer.run_config.credit.estimator == credit["estimator"]
        trainer.run()
    finally:
        trainer.close()
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if r.get("step", 0) >= 1 and "reward_mean" in r]
    assert len(steps) == 2
    assert all(r.get("finite", 1.0) == 1.0 for r in steps)


def test_an_estimator_the_code_env_cannot_serve_fails_before_any_work(tmp_path):
    c = small_config()
    c.credit.estimator = "gigpo"
    with pytest.raises(ValueError, match="anchor_id") as error:
        Trainer(c, tmp_path, show_progress=False)
    assert "\n" not in str(error.value)
