"""Records of older layouts read as today's, so a run started before a layout change
resumes (run_config.check_resumable compares the two records through `normalize`).

    normalize(record) -> the record in today's layout, with every spelling of one
                         setting made one value

Changes it covers (the env section's move to one layout per environment):
  env.options       an environment's own options moved up to env.<field> (TextWorld's
                    `history` is env.history_mode)
  env.<field>       a field shared by environments with different defaults is None when
                    unset ("the environment's own"): a value equal to the selected
                    environment's own default is that same setting
  loss.dual_clip    0.0 was the spelling of "no dual clip", now None (unset)
  a new field       absent from an old record (or a whole new section, lora): the run
                    used its default
"""

from __future__ import annotations

import copy

from mtrl.config.options import field_default
from mtrl.envs.registry import env_options
from mtrl.training.config.defaults_table import SECTIONS
from mtrl.training.config.record import config_record

# The earlier env layout: EnvSection's code fields (every environment's
# section held them) and what each environment read of them; its own extras were
# env.options.
OLD_CODE_FIELDS = ("feedback_mode", "sandbox_slice", "history_mode", "reward", "templates",
                   "reward_points", "feedback_style", "workers", "wall_s_per_test", "expert",
                   "expert_options", "end_on_success")
OLD_READS = {"code": OLD_CODE_FIELDS, "math": ("feedback_mode", "history_mode", "templates"),
             "tool": ("workers", "wall_s_per_test", "templates"), "textworld": (),
             "openenv": ()}
OLD_OPTION_NAMES = {"textworld": {"history": "history_mode"}}


def normalize(record: dict) -> dict:
    """The record in today's layout (module docstring); the input is not changed."""
    out = copy.deepcopy(record)
    env = out.get("env")
    if isinstance(env, dict) and "options" in env:  # the earlier layout
        name = env.get("name")
        for field in OLD_CODE_FIELDS:  # what the environment did not read meant nothing
            if field not in OLD_READS.get(name, OLD_CODE_FIELDS):
                env.pop(field, None)
        names = OLD_OPTION_NAMES.get(name, {})
        for key, value in dict(env.pop("options") or {}).items():
            env[names.get(key, key)] = value
    loss = out.get("loss")
    if isinstance(loss, dict) and loss.get("dual_clip") == 0.0:
        loss["dual_clip"] = None
    for section, fields in SECTIONS.items():
        if section not in out:  # a section added later (lora): the run used its defaults
            out[section] = {}
        if isinstance(out.get(section), dict):
            for field, default in fields.items():
                out[section].setdefault(field, config_record(default))  # JSON data
    if isinstance(env, dict):
        _own_defaults_unset(env)
    return out


def _own_defaults_unset(env: dict) -> None:
    """A shared env field (section default None) set to the selected environment's own
    default reads as unset."""
    entries = env_options()
    if env.get("name") not in entries:
        return
    own = entries[env["name"]].fields()
    for field, default in SECTIONS["env"].items():
        if default is None and field in own and env.get(field) == field_default(own[field]):
            env[field] = None
