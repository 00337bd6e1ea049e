"""The curriculum section: the learnable-band task sampler (seeded order, band
exclusion, state round trip) and the curriculum wired into training (metrics, the
band's record in the checkpoint, exact task order on resume). TCOD's turn mask is the
loss-mask pipeline's: tests/training/advantages/test_loss_mask.py."""

import json

import numpy as np
import pytest

from mtrl.training.config import base_config
from mtrl.training.config.readers import read_section
from mtrl.training.grow.curriculum import BandSampler, CurriculumConfig, StepTasks, seeded_order
from mtrl.training.loop.trainer import Trainer
from tests.training.loop.small_run import small_config

def test_plain_order_is_the_seeded_permutation_per_epoch():
    tasks = list(range(5))
    chooser = StepTasks(tasks, 2, seed=3, config=CurriculumConfig())
    drawn = chooser.choose(1) + chooser.choose(2) + chooser.choose(3)
    first_epoch = np.random.default_rng([3, 7, 0]).permutation(5).tolist()
    assert drawn[:5] == first_epoch
    assert drawn[5] == seeded_order(5, 3, 5)
    assert chooser.record(1, None) == {}


def test_band_skips_solved_and_unsolvable_tasks_and_round_trips():
    config = CurriculumConfig(learnable_band=True, band_window=4)
    band = BandSampler(6, seed=0, config=config)
    ids = band.next_ids(6)
    assert sorted(ids) == list(range(6))  # nothing recorded: every task is kept
    # task ids[0] always solved, ids[1] never, ids[2] half the time.
    band.record(ids[:3], [[True] * 4, [False] * 4, [True, False, True, False]])
    saved = band.state()
    later = band.next_ids(8)
    assert ids[0] not in later and ids[1] not in later and ids[2] in later
    assert band.in_band_fraction() == pytest.approx(4 / 6)
    again = BandSampler(6, seed=0, config=config)
    again.restore(json.loads(json.dumps(saved)))
    assert again.next_ids(8) == later
    with pytest.raises(ValueError, match="window changed"):
        BandSampler(6, 0, CurriculumConfig(learnable_band=True, band_window=5)).restore(saved)


def test_everything_outside_the_band_falls_back_to_the_plain_order():
    band = BandSampler(3, seed=1, config=CurriculumConfig(learnable_band=True))
    band.record([0, 1, 2], [[True], [True], [True]])
    assert len(band.next_ids(4)) == 4


@pytest.mark.parametrize("field, value, match", [
    ("tcod", "sideways", "config.curriculum.tcod: must be one of , front_to_back"),
    ("steps_per_stage", 0, "config.curriculum.steps_per_stage: "),
    ("band_low", 0.95, "config.curriculum: need 0 <= low <= high"),
    ("band_window", 0, "config.curriculum: window must be >= 1"),
])
def test_bad_curriculum_is_one_line(field, value, match):
    c = base_config()
    c.curriculum[field] = value
    with pytest.raises(ValueError, match=match) as error:
        read_section(c, "curriculum")
    assert "\n" not in str(error.value)


def test_training_with_band_and_tcod_records_and_resumes_the_band(tmp_path):
    c = small_config()
    c.data.num_train = 4
    c.curriculum.update(tcod="back_to_front", steps_per_stage=1, learnable_band=True,
                        band_window=2)
    c.train.steps, c.train.eval_interval, c.train.save_interval = 2, 2, 1
    trainer = Trainer(c, tmp_path, show_progress=False)
    try:
        trainer.run()
        band_after = trainer.step_tasks.band.state()
    finally:
        trainer.close()
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "curriculum/in_band_fraction" in r]
    assert [r["step"] for r in steps] == [1, 2]
    assert sum(band_after["attempts"]) > 0
    c.train.steps = 3  # resume from step 2: the band's record comes back with it
    resumed = Trainer(c, tmp_path, show_progress=False)
    try:
        resumed.run_config.curriculum  # noqa: B018 (built)
        restored = resumed.keeper.restore("latest", target=None)
        assert restored.extra["band"]["attempts"] == band_after["attempts"]
    finally:
        resumed.close()
