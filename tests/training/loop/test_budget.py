"""The run's time budget warns but never cuts the planned RL steps."""

import json

import pytest

from mtrl.training.loop.budget import Budget
from mtrl.training.loop.trainer import Trainer
from tests.training.loop.small_run import small_config
from tools.time_split import split_of


def test_budget_warns_once_and_reports(capsys):
    budget = Budget(1e-9, started=0.0)  # long exceeded
    budget.check(1, 5)
    budget.check(2, 5)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("warning: ") and "step 1/5" in err[0]
    assert budget.exceeded()
    assert not Budget(0.0, started=0.0).exceeded()  # 0: no budget
    with pytest.raises(ValueError, match="budget_minutes"):
        Budget(-1.0, started=0.0)


def test_a_run_over_budget_still_runs_every_planned_step(tmp_path, capsys):
    config = small_config()
    config.train.steps = 3
    config.train.eval_interval = 3
    config.train.save_interval = 3
    config.train.budget_minutes = 1e-6  # exceeded after the first step
    trainer = Trainer(config, tmp_path, show_progress=False)
    try:
        result = trainer.run()
    finally:
        trainer.close()
    records = [json.loads(line) for line in
               (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 1, 2, 3]
    # Where the time went: each validation (after SFT, at step 3) is timed, beside the
    # steps' own rollout and update seconds.
    assert [r["step"] for r in records if r.get("time/heldout_eval_s", -1.0) > 0] == [0, 3]
    assert "post_sft_time/heldout_eval_s" not in result
    # The parts add up to the run's time: nothing is counted twice or left out (the
    # evaluations after SFT are in the run's minutes).
    split = split_of(tmp_path)
    assert split["other"] >= 0 and split["after_rl"] >= 0, split
    assert result["steps"] == 3 and result["over_budget"] is True
    assert "over the 1e-06-minute budget" in capsys.readouterr().err


def test_a_negative_budget_is_refused_before_any_work(tmp_path):
    config = small_config()
    config.train.budget_minutes = -5.0
    with pytest.raises(ValueError, match="config.train.budget_minutes: must be a number >= 0"):
        Trainer(config, tmp_path, show_progress=False)
