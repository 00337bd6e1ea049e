"""Readers of the raw config's sections: each takes the ml_collections config and
returns its section as a validated frozen dataclass, with one-line errors naming
config.<section>.<field>. The dataclasses live with the code that reads them typed
(mtrl/training/sections.py, ...); root.parse calls every reader once.
"""

from __future__ import annotations

from mtrl.config.fields import as_dict, build, known_fields, resolve_path
from mtrl.training.sections import ModelSection, SFTSection, TrainConfig


# Old names of train fields: the name said something the option does not do.
RENAMED_TRAIN_FIELDS = {
    "dynamic_sampling": ("drop_zero_advantage", "it drops rows whose advantage is 0; DAPO's "
                         "dynamic sampling over-samples until every group's accuracy lies "
                         "strictly between 0 and 1, which mtrl does not do"),
}


def train_config(config) -> TrainConfig:
    """The validated `train` section (one-line errors naming config.train.<field>)."""
    for old, (new, why) in RENAMED_TRAIN_FIELDS.items():
        if old in config.train:
            raise ValueError(f"config.train.{old}: renamed train.{new} ({why})")
    values = known_fields(TrainConfig, config.train, "train")
    checked = build(TrainConfig, "train", **values)
    if checked.init_from:
        resolve_path(checked.init_from, "train.init_from")
    return checked


def sft_config(config) -> SFTSection:
    """The validated `sft` section (one-line errors naming config.sft.<field>)."""
    return build(SFTSection, "sft", **known_fields(SFTSection, config.sft, "sft"))


def model_config(config) -> ModelSection:
    values = known_fields(ModelSection, config.model, "model")
    values["overrides"] = dict(as_dict(values.get("overrides", {})))
    return build(ModelSection, "model", **values)
