"""The typed `train` section: every field validated once, one line naming it."""

import pytest

from mtrl.training.config import base_config
from mtrl.config import ConfigErrors
from mtrl.training.config.readers import read_train
from mtrl.training.run.sections import TrainConfig


def train_config(config) -> TrainConfig:
    train, lines = read_train(config)
    if lines:
        raise ConfigErrors(lines)
    return train


def test_base_config_train_section_is_valid():
    assert train_config(base_config()) == TrainConfig(**base_config().train.to_dict())


@pytest.mark.parametrize("field, value, message", [
    ("steps", -1, "config.train.steps: must be an int >= 0, got -1"),
    ("tasks_per_step", 0, "config.train.tasks_per_step: must be an int >= 1, got 0"),
    ("eval_interval", 0, "config.train.eval_interval: must be an int >= 1, got 0"),
    ("restore", "newest", "config.train.restore: must be one of latest, best, none"),
    ("budget_minutes", -3.0, "config.train.budget_minutes: must be a number >= 0"),
    ("keep_best", 0, "config.train.keep_best: must be an int >= 1, got 0"),
    ("bin_buckets", "1", "config.train.bin_buckets: must be 'auto', 'none', 'pow2' or a "
                         "ratio in (1, 16] such as '1.5', got '1'"),
    ("layout_growth", 0.5, "config.train.layout_growth: must be 0 (the backend's) or a "
                           "number in [1, 16], got 0.5"),
])
def test_bad_values_are_one_line(field, value, message):
    # (Type changes, e.g. a float for an int field, are refused by ml_collections itself.)
    config = base_config()
    config.train[field] = value
    with pytest.raises(ValueError) as error:
        train_config(config)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


@pytest.mark.parametrize("buckets, growth", [("none", 1.0), ("pow2", 2.0), ("1.25", 0.0),
                                             ("auto", 3)])
def test_layout_fields_accept_their_choices(buckets, growth):
    config = base_config()
    config.train.bin_buckets, config.train.layout_growth = buckets, growth
    train = train_config(config)
    assert (train.bin_buckets, train.layout_growth) == (buckets, growth)


def test_unknown_field_is_named():
    config = base_config()
    config.unlock()
    config.train.stepz = 3
    with pytest.raises(ValueError, match=r"config.train.stepz: no such field; valid: "):
        train_config(config)


def test_init_from_must_exist(tmp_path):
    config = base_config()
    config.train.init_from = str(tmp_path / "missing")
    with pytest.raises(ValueError, match="config.train.init_from: path .* does not exist"):
        train_config(config)
