"""parse(ConfigDict) -> RunConfig: every experiment config parses without model, data or
sandbox work; the result is frozen and typed; its record is the resolved config that
config.json holds; config-only checks fail here in one line."""

import dataclasses
import pathlib

import pytest

from mtrl.envs.registry import EnvSection
from mtrl.training.config import RunConfig, base_config, config_record, module_from_file, parse

CONFIGS = sorted((pathlib.Path(__file__).resolve().parents[3] / "experiments"
                  / "configs").glob("*.py"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_every_experiment_config_parses_without_building(path, no_work, monkeypatch):
    config = module_from_file(path).get_config()
    # Paths to local weights, tokenizers and data are checked by parse where they are
    # named; the SmolLM2 configs name files a fresh checkout does not have.
    monkeypatch.setattr("mtrl.training.run.build.resolve_path", lambda v, f, must_exist=True: v)
    monkeypatch.setattr("mtrl.training.config.readers.resolve_path", lambda v, f, must_exist=True: v)
    run = parse(config)
    assert isinstance(run, RunConfig) and isinstance(run.env, EnvSection)
    assert run.record == config_record(config)  # what config.json holds, unchanged
    assert run.seed == config.seed and run.env.name == config.env.get("name", "code")
    assert run.rollout.num_turns == config.rollout.num_turns
    assert run.train.steps == config.train.steps and run.sft.steps == config.sft.steps
    assert parse(run) is run


def test_run_config_is_frozen():
    run = parse(base_config())
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.seed = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.env.num_agents = 3


@pytest.mark.parametrize("section, field, value, message", [
    ("env", "feedbak_mode", "plain", r"^config\.env\.feedbak_mode: no such field; valid: "),
    ("env", "name", "nope", r"^config\.env\.name: must be one of code, .*, got 'nope'$"),
    ("env", "num_agents", 0, r"^config\.env\.num_agents: must be an int >= 1"),
    ("optim", "learning_rat", 1e-3, r"^config\.optim\.learning_rat: no such field; valid: "),
    (None, "seed", None, r"^config\.seed: must be an int, got None"),
])
def test_bad_fields_fail_in_one_line(no_work, section, field, value, message):
    c = base_config()
    if section is None:
        del c[field]  # ConfigDict's own type check refuses a wrong type earlier
    else:
        c[section][field] = value
    with pytest.raises(ValueError, match=message) as error:
        parse(c)
    assert "\n" not in str(error.value)


def test_ufo_on_the_code_environment_needs_end_on_success(no_work):
    c = base_config()
    c.credit.estimator = "ufo"
    with pytest.raises(ValueError, match=r"^config\.credit\.estimator: 'ufo' needs episodes "
                                         r"that end .*end_on_success=True"):
        parse(c)
    c.env.end_on_success = True
    assert parse(c).env.ends_on_success
