"""Readers of the raw config's sections: each takes its raw section (a dict) and
returns (the validated frozen dataclass or None, every error line found), each line
naming config.<section>.<field> and what to do; root.parse calls each once and
reports every line at once. The dataclasses live with the code that takes them typed
(sections.py SPECS lists them); the `loss` section's reader is loss.py.

Options owned by registry entries (credit estimators, environments, losses) are read
the same way (mtrl/config/options.py): the selected entry's into its options object,
another's set away from its default refused in one line.
"""

from __future__ import annotations

from typing import Any

from mtrl.config.fields import (ConfigErrors, as_dict, build_all, check_choice, field_line,
                                resolve_path)
from mtrl.config.options import refuse_unowned, section_options, take_options
from mtrl.credit import RewardRecipe
from mtrl.envs.registry import EnvSection, env_options
from mtrl.training.advantages.estimators import CreditConfig, estimator_options
from mtrl.training.advantages.registry import LEGACY_BASELINE_NAMES
from mtrl.training.config.loss import read_loss
from mtrl.training.config.sections import RECIPES, SPECS, section_defaults
from mtrl.training.logging.traces import check_traces_installed
from mtrl.training.logging.wandb_sink import check_wandb_installed
from mtrl.training.run.sections import TrainConfig
from mtrl.training.policy.optim import OptimConfig

Read = tuple[Any, list[str]]

# Fields renamed or moved: the old name fails in one line saying where it went.
MOVED_FIELDS = {
    "train.dynamic_sampling": "renamed train.drop_zero_advantage (it drops rows whose "
                              "advantage is 0; DAPO's dynamic sampling over-samples until "
                              "every group's accuracy lies strictly between 0 and 1, which "
                              "mtrl does not do)",
    "env.options": "an environment's options are env.<field> fields now (e.g. "
                   "env.max_output_chars, env.history_mode); move them up one level",
}


def section_values(config, name: str) -> tuple[dict, list[str]]:
    """The raw section as a dict and a line per field it does not have (a field set
    under the wrong section, a moved field, a typo)."""
    raw = config.get(name, None) if hasattr(config, "get") else None
    values = {} if raw is None else dict(as_dict(raw))
    known = set(section_defaults(name))
    lines = []
    for field in sorted(set(values) - known):
        moved = MOVED_FIELDS.get(f"{name}.{field}")
        lines.append(f"config.{name}.{field}: {moved}" if moved else
                     f"config.{name}.{field}: no such field; valid: {', '.join(sorted(known))}")
        del values[field]
    return values, lines


def read_plain(config, name: str, **extra) -> Read:
    """A section that is its dataclass's fields (plus `extra` values from elsewhere)."""
    values, lines = section_values(config, name)
    for field in ("overrides", "options"):  # nested dicts of the section
        if isinstance(values.get(field), dict) or hasattr(values.get(field), "to_dict"):
            values[field] = dict(as_dict(values[field]))
    built, more = build_all(SPECS[name].cls, name, **values, **extra)
    return built, lines + more


def read_owned(config, name: str, selector: str, entries: dict, **fixed_extra) -> tuple[
        dict | None, Any, list[str]]:
    """(the section's own fields, the selected entry's options, lines) of a section
    whose options belong to registry entries."""
    values, lines = section_values(config, name)
    defaults = section_options(entries)
    options = {k: values.pop(k) for k in list(values) if k in defaults}
    selected = values.get(selector, SPECS[name].cls.__dataclass_fields__[selector].default)
    if selected not in entries:
        return values, None, lines  # the dataclass names the choices
    lines += refuse_unowned(name, selector, selected, options, entries)
    decl = entries[selected]
    owned = {k: v for k, v in options.items() if k in decl.fields()}
    built, more = build_all(lambda **kw: take_options(decl, kw, defaults), name, **owned)
    return values, built, lines + more


def read_env(config) -> Read:
    entries = env_options()
    values, options, lines = read_owned(config, "env", "name", entries)
    built, more = build_all(EnvSection, "env", **values, options=options)
    return built, lines + more


def read_credit(config) -> Read:
    raw, _ = section_values(config, "credit")
    legacy = raw.get("estimator") if raw.get("estimator") in LEGACY_BASELINE_NAMES else None
    entries = estimator_options()
    if legacy:  # estimator = mean | max | raw: magrpo with that baseline
        config = {**as_dict(config), "credit": {**raw, "estimator": "magrpo",
                                                "baseline": legacy}}
    values, options, lines = read_owned(config, "credit", "estimator", entries)
    built, more = build_all(CreditConfig, "credit", **values, options=options)
    return built, lines + more


def read_data(config) -> Read:
    data, lines = read_plain(config, "data")
    if data is not None:
        try:
            resolve_path(data.path, "data.path")
        except ValueError as e:
            return None, lines + [str(e)]
    return data, lines


def read_train(config) -> Read:
    train, lines = read_plain(config, "train")
    if train is not None:
        try:
            if train.init_from:
                resolve_path(train.init_from, "train.init_from")
            check_wandb_installed(train.wandb_project)
            check_traces_installed(train.write_traces)
        except ValueError as e:
            message = str(e)
            return None, lines + [message if message.startswith("config.")
                                  else f"config.{message}"]
    return train, lines


def read_reward(config, num_turns: int | None) -> Read:
    """None for recipe "env" (the environment's rewards), else the RewardRecipe (its
    dominance check runs here, with max_turns = rollout.num_turns)."""
    values, lines = section_values(config, "reward")
    name = values.pop("recipe", "env")
    try:
        check_choice("recipe", name, RECIPES)
    except ValueError as e:
        return None, lines + [field_line("reward", str(e), ("recipe",))]
    if name == "env" or num_turns is None:
        return None, lines
    recipe, more = build_all(RewardRecipe, "reward", max_turns=num_turns, **values)
    return recipe, lines + more


def read_optim(config, train: TrainConfig | None) -> Read:
    values, lines = section_values(config, "optim")
    steps = max(1, train.steps) if train is not None else 1
    optim, more = build_all(OptimConfig, "optim", total_steps=steps, **values)
    return optim, lines + more


def read_section(config, name: str) -> Any:
    """Section `name` of a raw config as its typed value (the loss section: its policy
    objective), or ConfigErrors with its lines (what a script that needs one section
    reads; parse reads them all)."""
    def read_loss_section(c):
        values, lines = section_values(c, "loss")
        parts, more = read_loss(values, as_dict(c.rollout).get("num_turns"))
        return (parts.objective if parts else None), lines + more

    readers = {"env": read_env, "credit": read_credit, "data": read_data,
               "train": read_train, "loss": read_loss_section,
               "reward": lambda c: read_reward(c, as_dict(c.rollout).get("num_turns")),
               "optim": lambda c: read_optim(c, read_train(c)[0])}
    value, lines = readers.get(name, lambda c: read_plain(c, name))(config)
    if lines:
        raise ConfigErrors(lines)
    return value
