"""Bad inputs fail when the config is built: one line naming the field, before any
model, data or sandbox work (issue 23, defect 10)."""

import pytest

from mtrl.training.loop.trainer import Trainer
from tests.training.loop.test_compile_count import small_config


def refused(tmp_path, c, match):
    with pytest.raises(ValueError, match=match) as error:
        Trainer(c, tmp_path, show_progress=False)
    assert "\n" not in str(error.value)
    return str(error.value)


@pytest.mark.parametrize("minibatches", [3, 6, 16])
def test_minibatches_that_do_not_divide_every_batch(tmp_path, no_work, minibatches):
    # 2 tasks x 2 samples: the batch has 8, 16, ... rows (a power of two >= 8 rows),
    # so 3 and 6 never divide it and 16 does not divide a batch whose tree stopped
    # at turn 1 (8 rows).
    c = small_config()
    c.train.minibatches = minibatches
    refused(tmp_path, c, r"^config\.train\.minibatches: ")


def test_minibatches_with_pairs_count_pairs(tmp_path, no_work):
    c = small_config()  # 8 rows at least: 4 REFUEL pairs, so 8 minibatches cannot be whole
    c.loss.policy_loss, c.credit.estimator = "refuel", "dr_grpo"
    c.train.minibatches = 8
    refused(tmp_path, c, r"^config\.train\.minibatches: .*pairs")


@pytest.mark.parametrize("credit", [{}, {"estimator": "grpo"}, {"estimator": "rloo"},
                                    {"estimator": "ufo"}, {"estimator": "mt_grpo"}])
def test_one_generation_with_a_group_relative_estimator(tmp_path, no_work, credit):
    c = small_config()
    c.rollout.num_generations = 1
    c.credit.update(credit)
    refused(tmp_path, c, r"^config\.rollout\.num_generations: 1 .*credit\.estimator")


def test_one_generation_with_raw_returns_is_accepted():
    from mtrl.training.config.readers import credit_config
    from mtrl.training.advantages.estimators import check_group_size
    c = small_config()
    c.rollout.num_generations, c.credit.baseline = 1, "raw"
    check_group_size(credit_config(c), num_generations=1)  # no baseline: R itself


@pytest.mark.parametrize("field, value, match", [
    ("gigpo_omega", -0.5, r"^config\.credit: gigpo_omega must be >= 0, got -0\.5"),
    ("turn_coef", -1.0, r"^config\.credit: turn_coef must be >= 0, got -1\.0$"),
    ("ufo_gamma", 1.5, r"^config\.credit: ufo_gamma must lie in \[0, 1\], got 1\.5$"),
    ("ufo_penalty", -0.1, r"^config\.credit: ufo_penalty must be >= 0, got -0\.1$"),
])
def test_bad_estimator_options(tmp_path, no_work, field, value, match):
    c = small_config()
    # The option's own estimator, so the value (not the selection) is what is wrong.
    c.credit.estimator = {"gigpo_omega": "gigpo", "turn_coef": "mt_grpo"}.get(field, "ufo")
    c.credit[field] = value
    refused(tmp_path, c, match)


@pytest.mark.parametrize("field, value, owner", [
    ("ufo_gamma", 0.5, "ufo"), ("ufo_penalty", 0.1, "ufo"), ("gigpo_omega", 2.0, "gigpo"),
    ("turn_coef", 0.1, "mt_grpo"), ("lambda_on", "outcome", "mt_grpo"),
    ("igpo_gain", "logprob", "igpo"), ("igpo_normalization", "separate", "igpo"),
    ("baseline", "rloo", "magrpo"),
])
def test_options_of_an_estimator_that_is_not_selected(tmp_path, no_work, field, value, owner):
    c = small_config()
    c.credit.estimator = "grpo" if owner == "magrpo" else "magrpo"
    c.credit[field] = value
    message = refused(tmp_path, c, rf"^config\.credit: {field} is set to {value!r} but only "
                                   rf"{owner} reads it")
    assert c.credit.estimator in message


def test_options_of_the_selected_estimator_are_accepted():
    from mtrl.training.config.readers import credit_config
    c = small_config()
    c.credit.estimator, c.credit.ufo_gamma, c.credit.ufo_penalty = "ufo", 0.5, 0.1
    assert credit_config(c).ufo_gamma == 0.5


@pytest.mark.parametrize("field, value, match", [
    ("kl_estimator", "k9", r"^config\.loss\.kl_estimator: unknown 'k9'"),
    ("kl_coef", -1.0, r"^config\.loss\.kl_coef: must be >= 0"),
])
def test_kl_fields_are_reported_under_their_own_name(tmp_path, no_work, field, value, match):
    c = small_config()
    c.loss[field] = value
    refused(tmp_path, c, match)


@pytest.mark.parametrize("value", [True, False])
def test_the_old_dynamic_sampling_name_points_to_what_the_option_does(tmp_path, no_work, value):
    # mtrl drops zero-advantage rows; DAPO's dynamic sampling over-samples until every
    # group has accuracy strictly between 0 and 1, which mtrl does not do.
    c = small_config()
    c.train.dynamic_sampling = value
    refused(tmp_path, c, r"^config\.train\.dynamic_sampling: renamed "
                         r"train\.drop_zero_advantage .*over-samples")


def test_drop_zero_advantage_is_the_trainers_switch():
    from mtrl.training.config.readers import train_config
    c = small_config()
    c.train.drop_zero_advantage = True
    assert train_config(c).drop_zero_advantage is True
    c.train = dict(c.train.to_dict(), drop_zero_advantage=1)  # the type, not the value
    with pytest.raises(ValueError, match=r"^config\.train: drop_zero_advantage must be True"):
        train_config(c)
