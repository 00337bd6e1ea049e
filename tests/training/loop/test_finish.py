"""The end of a run: the test splits for the checkpoint validation chose and for the
last one (test.json, test_last.json, last_test_success), and the provenance every
record carries (code state, config hash, the warm start's digest)."""

import json

from mtrl.training.loop.trainer import Trainer
from mtrl.training.run.provenance import code_state, config_hash, read_provenance
from tests.training.loop.small_run import small_config


def test_the_last_checkpoint_is_tested_too_and_every_record_names_its_origin(tmp_path):
    config = small_config()
    config.train.steps = 2
    config.train.eval_interval = 1
    config.train.save_interval = 1
    config.data.test_split = "test"
    config.data.num_test = 2
    config.data.options = dict(test_terms=("5x",), test_offset_range=(0, 3))
    trainer = Trainer(config, tmp_path, show_progress=False)
    trainer.keeper.best_step = lambda: 1  # validation "chose" step 1; the last is step 2
    try:
        result = trainer.run()
        record = trainer.config_record
    finally:
        trainer.close()
    chosen = json.loads((tmp_path / "test.json").read_text())
    last = json.loads((tmp_path / "test_last.json").read_text())
    assert (chosen["step"], last["step"]) == (1, 2)
    assert result["test_success"] == chosen["test_success"]
    assert result["last_test_success"] == last["test_success"]
    # Beside Succ@T, turn-1 success and the feedback gain's count (its gain when n > 0).
    for tested, prefix in ((chosen, ""), (last, "last_")):
        assert tested["test_success_turn1"] == result[f"{prefix}test_turn1_success"]
        assert tested["test_feedback_gain_tasks"] == result[f"{prefix}test_feedback_gain_tasks"]
        assert tested.get("test_feedback_gain") == result[f"{prefix}test_feedback_gain"]
    provenance = result["provenance"]
    assert provenance == chosen["provenance"] == last["provenance"] == read_provenance(tmp_path)
    assert provenance["code"] == code_state() and provenance["mixed_code"] is False
    assert provenance["config_hash"] == config_hash(record)
    assert len(provenance["warm_start"]["digest"]) == 64
    assert provenance["warm_start"]["source"] is None  # no train.init_from
