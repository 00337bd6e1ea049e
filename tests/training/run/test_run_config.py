"""The resolved config in the workdir: written at start, compared on resume (one line
naming the field), and train.init_from starting a run from another run's weights."""

import json

import jax
import numpy as np
import pytest
from flax import nnx

from mtrl.training.config import config_record
from mtrl.training.config.migrate import normalize
from mtrl.training.run.run_config import check_resumable, differences, write_config
from mtrl.training.loop.trainer import Trainer
from tests.training.loop.small_run import small_config


def one_step_config():
    config = small_config()
    config.train.steps = 1
    config.train.eval_interval = 1
    config.train.save_interval = 1
    return config


def test_record_is_plain_json_and_differences_skip_resumable_fields():
    config = one_step_config()
    record = config_record(config)
    assert json.loads(json.dumps(record)) == record
    changed = one_step_config()
    changed.train.steps = 50  # extending a run is allowed
    changed.train.bin_buckets, changed.train.layout_growth = "pow2", 2.0  # padding only
    changed.rollout.num_generations = 8
    changed.credit.estimator = "max"
    assert differences(record, config_record(changed)) == [
        ("credit.estimator", record["credit"]["estimator"], "max"),
        ("rollout.num_generations", 2, 8)]


def test_a_field_added_later_resumes_old_records_only_at_its_default():
    record = config_record(one_step_config())
    old = json.loads(json.dumps(record))
    del old["train"]["eval_turns"]  # a config.json written before the field existed
    assert differences(normalize(old), normalize(record)) == []
    two = one_step_config()
    two.train.eval_turns = 2
    assert differences(normalize(old), normalize(config_record(two))) == [
        ("train.eval_turns", 0, 2)]


def test_resuming_with_another_config_is_one_line(tmp_path):
    trainer = Trainer(one_step_config(), tmp_path, show_progress=False)
    try:
        first = trainer.run()
    finally:
        trainer.close()
    # Rerun as it is: the whole run's time grows by this invocation's (the time the
    # first spent after its last checkpoint, its test and plot, is not lost).
    again = Trainer(one_step_config(), tmp_path, show_progress=False)
    try:
        second = again.run()
    finally:
        again.close()
    assert second["minutes"] == pytest.approx(first["minutes"] + second["invocation_minutes"],
                                              abs=2e-3)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["rollout"]["num_generations"] == 2
    changed = one_step_config()
    changed.rollout.num_generations = 4
    with pytest.raises(ValueError) as error:
        Trainer(changed, tmp_path, show_progress=False)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("config.rollout.num_generations is 4 but the run in")
    longer = one_step_config()
    longer.train.steps = 2
    check_resumable(tmp_path, config_record(longer))  # more steps: resumable


def test_a_workdir_without_checkpoints_takes_any_config(tmp_path):
    write_config(tmp_path, config_record(one_step_config()))
    changed = one_step_config()
    changed.rollout.num_generations = 4
    check_resumable(tmp_path, config_record(changed))  # nothing to resume: no error


def test_init_from_starts_from_the_source_runs_latest_weights(tmp_path):
    source = tmp_path / "source"
    source_config = one_step_config()
    source_config.seed = 1  # other initial weights than the follower's seed 0
    trainer = Trainer(source_config, source, show_progress=False)
    try:
        trainer.run()
        expected = trainer.starter.params_from(str(source))
    finally:
        trainer.close()
    config = one_step_config()
    config.sft.enabled = True  # skipped: init_from replaces the warm start
    config.train.init_from = str(source)
    config.credit.estimator = "max"
    follower = Trainer(config, tmp_path / "arm", show_progress=False)
    try:
        own = [nnx.split(m)[1] for m in follower.c.models]
        got = follower.starter.run(log=lambda *args: pytest.fail("SFT ran"))
    finally:
        follower.close()
    assert len(got) == len(expected) == 2
    for a in range(2):
        pairs = list(zip(jax.tree.leaves(got[a]), jax.tree.leaves(expected[a]),
                         jax.tree.leaves(own[a])))
        for x, y, _ in pairs:
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        assert any(not np.array_equal(np.asarray(x), np.asarray(z)) for x, _, z in pairs)


def test_init_from_a_missing_directory_is_one_line(tmp_path):
    config = one_step_config()
    config.train.init_from = str(tmp_path / "nowhere")
    with pytest.raises(ValueError, match=r"config.train.init_from: path .* does not exist"):
        Trainer(config, tmp_path / "run", show_progress=False)


def test_zero_steps_is_a_warm_start_with_its_evaluation(tmp_path):
    config = one_step_config()
    config.train.steps = 0
    trainer = Trainer(config, tmp_path, show_progress=True)
    try:
        result = trainer.run()
    finally:
        trainer.close()
    assert result["steps"] == 0 and result["best_step"] == 0
    assert [json.loads(line)["step"] for line in
            (tmp_path / "metrics.jsonl").read_text().splitlines()] == [0]


def test_eval_turns_tests_a_single_turn_policy_with_a_second_attempt(tmp_path):
    config = one_step_config()
    config.train.steps = 0
    config.rollout.num_turns = 1
    config.train.eval_turns = 2
    trainer = Trainer(config, tmp_path, show_progress=False)
    try:
        metrics = trainer.evaluate(0)
    finally:
        trainer.close()
    assert {"heldout_success_turn1", "heldout_success_turn2"} <= set(metrics)
    assert metrics["heldout_success_turn2"] >= metrics["heldout_success_turn1"]
