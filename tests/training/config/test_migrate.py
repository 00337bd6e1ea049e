"""A workdir of the earlier env layout resumes: its config.json reads as today's
record (migrate.normalize), for the code, math, tool and TextWorld layouts."""

import pytest

from mtrl.training.config import base_config, config_record
from mtrl.training.config.migrate import normalize
from mtrl.training.run.run_config import check_resumable, differences, write_config
from tests.envs.math.smoke import load_config

# The env and loss sections as the old layout recorded them (EnvSection's code fields
# in every section; an environment's own extras in env.options; dual_clip 0.0).
OLD_CODE_ENV = {"name": "code", "options": {}, "num_agents": 2,
                "feedback_mode": "level_feedback", "sandbox_slice": 1, "history_mode": "full",
                "reward": "level", "templates": "tiny", "reward_points": {},
                "feedback_style": "compact", "workers": 0, "wall_s_per_test": 2.0,
                "expert": "", "expert_options": {}, "end_on_success": False}
OLD_LOSS = {"policy_loss": "reinforce", "aggregation": None, "kl_estimator": "k3",
            "kl_coef": 0.0, "eps_low": None, "eps_high": None, "dual_clip": 0.0,
            "refuel_eta": 1.0, "kl_in": "loss"}


def old_record(config, env):
    record = config_record(config)
    record["env"], record["loss"] = env, dict(OLD_LOSS)
    return record


@pytest.mark.parametrize("name, old_env", [
    ("default", {**OLD_CODE_ENV, "history_mode": "feedback"}),
    ("math", {**OLD_CODE_ENV, "name": "math", "num_agents": 1, "feedback_mode": "unary",
              "templates": "default"}),
    ("tool", {**OLD_CODE_ENV, "name": "tool", "num_agents": 1, "templates": "default",
              "workers": 2, "options": {"max_output_chars": 200}}),
    ("textworld", {**OLD_CODE_ENV, "name": "textworld", "num_agents": 1,
                   "options": {"history": "last", "feedback_chars": 160,
                               "invalid_penalty": 0.05, "lose_reward": -1.0,
                               "max_moves": 20}}),
])
def test_an_old_record_reads_as_todays(name, old_env):
    config = load_config(name)
    now = config_record(config)
    assert differences(normalize(old_record(config, old_env)), normalize(now)) == []
    assert differences(old_record(config, old_env), now)  # the raw layouts differ


def test_a_changed_setting_still_differs():
    config = base_config()
    old = old_record(config, {**OLD_CODE_ENV, "feedback_mode": "plain"})
    diff = differences(normalize(old), normalize(config_record(config)))
    assert [d[0] for d in diff] == ["env.feedback_mode"]


def test_resume_compares_through_the_migration(tmp_path):
    config = base_config()
    write_config(tmp_path, old_record(config, OLD_CODE_ENV))
    (tmp_path / "checkpoints" / "3").mkdir(parents=True)  # progress to resume from
    check_resumable(tmp_path, config_record(config), normalize=normalize)  # no error
    with pytest.raises(ValueError, match=r"^config\.env\."):
        check_resumable(tmp_path, config_record(config))  # without it: the layout differs
