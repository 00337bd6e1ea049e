"""The stalled-run line: once per stretch of STALL_STEPS skipped updates, naming the
first step of the stretch and the likely cause."""

import pytest

from mtrl.training.loop.stall import StallWatch

SKIP = "update skipped: no informative group"


def test_a_stretch_of_skipped_updates_is_said_once():
    watch = StallWatch(limit=3)
    said = [watch.observe(step, SKIP, 0.0) for step in range(1, 8)]
    assert said[:2] == [None, None] and said[3:] == [None] * 4
    assert said[2].startswith("RL has not trained since step 1: 3 updates in a row "
                              "skipped (no informative group).")
    assert "validation success after the warm start: 0.00" in said[2]
    assert "\n" not in said[2]


def test_an_update_that_ran_starts_the_count_again():
    watch = StallWatch(limit=2)
    assert [watch.observe(s, k, None) for s, k in
            [(1, SKIP), (2, None), (3, SKIP), (4, SKIP), (5, None), (6, SKIP)]] == \
        [None, None, None, watch_line(3, 2), None, None]


def watch_line(start, limit):
    return StallWatch(limit=limit, streak=limit - 1).observe(start + limit - 1, SKIP, None)


def test_a_limit_below_one_is_refused():
    with pytest.raises(ValueError, match="limit must be >= 1"):
        StallWatch(limit=0)


def test_a_trainer_whose_updates_all_skip_says_so(tmp_path, monkeypatch, capsys):
    """A tiny untrained model without SFT gets reward 0 on every sample: no group is
    informative, every update is skipped, and the run says so once."""
    import functools

    from mtrl.training.loop import trainer as trainer_module
    from tests.training.loop.small_run import small_config
    monkeypatch.setattr(trainer_module, "StallWatch",
                        functools.partial(StallWatch, limit=2))
    c = small_config()
    c.train.steps = 3
    c.train.eval_interval = c.train.save_interval = 3
    c.train.drop_zero_advantage = True
    run = trainer_module.Trainer(c, tmp_path, show_progress=False)
    try:
        result = run.run()
    finally:
        run.close()
    out = capsys.readouterr().out
    assert result["updates_run"] == 0, result
    lines = [line for line in out.splitlines() if line.startswith("RL has not trained")]
    assert lines == [lines[0]] and "since step 1: 2 updates in a row skipped" in lines[0]
