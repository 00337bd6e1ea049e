"""apply_overrides: "a.b=value" typed by the field it sets, as the trainer's flags do."""

import pytest

from mtrl.training.config.defaults import base_value
from mtrl.training.config.overrides import config_with_overrides
from mtrl.training.config.files import CHECKOUT

DEFAULT = CHECKOUT / "experiments" / "configs" / "default.py"


def test_overrides_are_typed_by_their_field_and_later_ones_win():
    config = config_with_overrides(DEFAULT, ["train.eval_samples=2",
                                             "--config.env.feedback_mode=plain",
                                             "train.eval_samples=3",
                                             "rollout.temperature=0.5"])
    assert config.train.eval_samples == 3 and isinstance(config.train.eval_samples, int)
    assert config.env.feedback_mode == "plain"
    assert config.rollout.temperature == 0.5


def test_none_sets_the_embedded_default():
    config = config_with_overrides(DEFAULT, ["train.eval_samples=4", "train.eval_samples=None"])
    assert config.train.eval_samples == base_value("train.eval_samples")


@pytest.mark.parametrize("override, message", [
    ("train.no_such_field=1", "has no field 'train.no_such_field'"),
    ("nosection.x=1", "has no field 'nosection.x'"),
    ("train.eval_samples", "expected field=value"),
    ("train.eval_samples=two", "invalid literal for int"),
])
def test_bad_overrides_fail_in_one_line(override, message):
    with pytest.raises(ValueError, match=message) as error:
        config_with_overrides(DEFAULT, [override])
    assert "\n" not in str(error.value)
