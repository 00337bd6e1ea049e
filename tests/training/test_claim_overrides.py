"""Every registered claim names a suite config that loads, and its common and arm
overrides parse against that config as `python -m mtrl.train --config.*` parses them
(ml_collections flags: the field must exist, the value must have its type), and the
credit and environment options they set are accepted by their dataclasses. No
training: it catches a claim whose arm would fail at its first command line."""

import pathlib

import pytest
from absl import flags
from ml_collections import config_flags

from mtrl.config import as_dict, build
from mtrl.training.arm_runs import suite_config
from mtrl.training.claims import CLAIMS_DIR, load_claim
from mtrl.training.methods import CreditConfig

NAMES = sorted(p.stem for p in CLAIMS_DIR.glob("*.py") if not p.stem.startswith("_"))


def parsed_config(config_path: pathlib.Path, overrides):
    """The config after `--config.<override>` flags, parsed by a fresh flag set."""
    values = flags.FlagValues()
    config_flags.DEFINE_config_file("config", str(config_path), flag_values=values,
                                    lock_config=True)
    values(["prog", f"--config={config_path}", *(f"--config.{kv}" for kv in overrides)])
    return values.config


@pytest.mark.parametrize("name", NAMES)
def test_claim_overrides_parse_against_its_suite(name):
    claim = load_claim(name)
    path = suite_config(claim.suite)
    for arm in claim.arms:
        overrides = ["train.steps=0", *claim.common, *arm.overrides]
        config = parsed_config(path, overrides)
        for kv in overrides:
            key, value = kv.split("=", 1)
            node = config
            for part in key.split("."):
                node = node[part]
            assert str(node) == value or float(node) == float(value), (name, arm.name, kv)
        build(CreditConfig, "credit", **as_dict(config.credit))
        if config.env.name == "tool":
            from mtrl.envs.tool import ToolEnvConfig
            options = dict(as_dict(config.env.options))
            build(ToolEnvConfig, "env.options", **options)


def test_new_issue28_claims_are_registered_on_their_suites():
    assert load_claim("mt_grpo_vs_grpo").suite == "tool_calc"
    assert load_claim("gigpo_vs_grpo").suite == "textworld_long"
