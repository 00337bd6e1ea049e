"""Bad inputs fail when the config is built: one line naming the field, before any
model, data or sandbox work."""

import pytest

from mtrl.training.config import parse
from mtrl.training.loop.trainer import Trainer
from tests.training.loop.small_run import small_config


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
    refused(tmp_path, c, r"^config\.train\.minibatches: .*whole groups of 2 rows "
                         r"\(loss 'refuel'\)")


@pytest.mark.parametrize("credit", [{}, {"estimator": "grpo"}, {"estimator": "rloo"},
                                    {"estimator": "ufo"}, {"estimator": "mt_grpo"}])
def test_one_generation_with_a_group_relative_estimator(tmp_path, no_work, credit):
    c = small_config()
    c.rollout.num_generations = 1
    c.credit.update(credit)
    c.env.end_on_success = credit.get("estimator") == "ufo"  # UFO's other requirement
    refused(tmp_path, c, r"^config\.rollout\.num_generations: 1 .*credit\.estimator")


def test_one_generation_with_raw_returns_is_accepted():
    c = small_config()
    c.rollout.num_generations, c.credit.baseline = 1, "raw"
    assert parse(c).rollout.num_generations == 1  # no baseline: R itself


@pytest.mark.parametrize("field, value, match", [
    ("gigpo_omega", -0.5, r"^config\.credit\.gigpo_omega: must be a number >= 0, got -0\.5"),
    ("turn_coef", -1.0, r"^config\.credit\.turn_coef: must be a number >= 0, got -1\.0$"),
    ("ufo_gamma", 1.5, r"^config\.credit\.ufo_gamma: must lie in \[0, 1\], got 1\.5$"),
    ("ufo_penalty", -0.1, r"^config\.credit\.ufo_penalty: must be a number >= 0, got -0\.1$"),
])
def test_bad_estimator_options(tmp_path, no_work, field, value, match):
    c = small_config()
    # The option's own estimator, so the value (not the selection) is what is wrong.
    c.credit.estimator = {"gigpo_omega": "gigpo", "turn_coef": "mt_grpo"}.get(field, "ufo")
    c.env.end_on_success = c.credit.estimator == "ufo"  # UFO's other requirement
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
    message = refused(tmp_path, c, rf"^config\.credit\.{field}: set to {value!r}, but only "
                                   rf"{owner} reads it and credit\.estimator is")
    assert c.credit.estimator in message and message.endswith("leave it unset")


def test_options_of_the_selected_estimator_are_accepted():
    from mtrl.training.config.readers import read_credit
    c = small_config()
    c.credit.estimator, c.credit.ufo_gamma, c.credit.ufo_penalty = "ufo", 0.5, 0.1
    credit, lines = read_credit(c)
    assert lines == [] and credit.options.ufo_gamma == 0.5


@pytest.mark.parametrize("field, value, match", [
    ("kl_estimator", "k9", r"^config\.loss\.kl_estimator: must be one of k1, k2, k3, got 'k9'"),
    ("kl_coef", -1.0, r"^config\.loss\.kl_coef: must be a number >= 0"),
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
    c = small_config()
    c.train.drop_zero_advantage = True
    assert parse(c).train.drop_zero_advantage is True
    c.train = dict(c.train.to_dict(), drop_zero_advantage=1)  # the type, not the value
    with pytest.raises(ValueError, match=r"^config\.train\.drop_zero_advantage: must be True"):
        parse(c)


def test_every_error_at_once_each_naming_its_field(no_work):
    """Three agents on the default once failed three starts, one SFT error each; every
    error is one line, all reported together, and a rule that depends on another
    field says which."""
    c = small_config()
    c.env.num_agents = 3
    c.sft = dict(c.sft.to_dict(), revision_fraction=(0.1, 0.2), resubmit_fraction=(0.0, 0.0),
                 first_phase=("first_turn", "revisions"))
    c.train.steps = -1
    c.credit.turn_coef = 0.5
    with pytest.raises(ValueError) as error:
        parse(c)
    lines = str(error.value).splitlines()
    assert lines == error.value.lines
    fields = [line.split(":")[0] for line in lines]
    assert {"config.train.steps", "config.credit.turn_coef", "config.sft.first_phase",
            "config.sft.revision_fraction", "config.sft.resubmit_fraction"} <= set(fields)
    assert any(line.startswith("config.sft.revision_fraction: env.num_agents=3 needs "
                               "sft.revision_fraction with 3 entries") for line in lines)


def test_a_one_entry_tuple_is_one_value_for_every_agent(no_work):
    """What the message lists as valid is accepted: a tuple of one kind (a config file
    setting a tuple, then --config.sft.first_phase=revisions) is that kind for all."""
    c = small_config()
    c.sft = dict(c.sft.to_dict(), first_phase=("revisions",), revision_fraction=(0.5,))
    assert parse(c).sft.first_phase == ("revisions",)


@pytest.mark.parametrize("agents", [0, -2, "two"])
def test_an_invalid_agent_count_is_the_only_line_about_agents(no_work, agents):
    """The per-agent SFT rules would otherwise read the placeholder count and say
    'env.num_agents=1 needs ...' about a config that never set 1."""
    c = small_config()  # the default's two agents, each with its own SFT fractions
    c.sft = dict(c.sft.to_dict(), revision_fraction=(1.0, 1.0), resubmit_fraction=(0.7, 0.0),
                 first_phase=("revisions", "first_turn"))
    c.env = dict(c.env.to_dict(), num_agents=agents)
    with pytest.raises(ValueError) as error:
        parse(c)
    lines = str(error.value).splitlines()
    assert [line for line in lines if "num_agents" in line] == [
        line for line in lines if line.startswith("config.env.num_agents: ")], lines
    assert not any("num_agents=1" in line for line in lines), lines
