"""Readers of the raw config's sections: each takes the ml_collections config and
returns its section as a validated frozen dataclass, with one-line errors naming
config.<section>.<field>; root.parse calls each once (the `loss` section's readers
are loss.py). The dataclasses live with the code that takes them typed:

  train, sft, model   training/run/sections.py        data     data/suite.py DataConfig
  chat                training/run/chat.py            credit   training/advantages/estimators.py
  filters             training/advantages/penalties.py         curriculum  training/grow/curriculum.py
  reward              credit/reward_recipe.py RewardRecipe
  env                 envs/registry.py EnvSection  mesh    parallel/mesh.py MeshConfig
  lora                models/lora.py LoRAConfig
"""

from __future__ import annotations

from mtrl.config.fields import as_dict, build, known_fields, resolve_path
from mtrl.credit import RewardRecipe
from mtrl.data.suite import DataConfig
from mtrl.envs.registry import EnvSection
from mtrl.models.lora import LoRAConfig
from mtrl.parallel.mesh import MeshConfig
from mtrl.training.run.chat import ChatSection
from mtrl.training.grow.curriculum import CurriculumConfig
from mtrl.training.advantages.penalties import FilterConfig
from mtrl.training.advantages.estimators import CreditConfig
from mtrl.training.run.sections import ModelSection, SFTSection, TrainConfig
from mtrl.training.logging.wandb_sink import check_wandb_installed

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
    check_wandb_installed(checked.wandb_project)
    return checked


def sft_config(config) -> SFTSection:
    """The validated `sft` section (one-line errors naming config.sft.<field>)."""
    return build(SFTSection, "sft", **known_fields(SFTSection, config.sft, "sft"))


def model_config(config) -> ModelSection:
    values = known_fields(ModelSection, config.model, "model")
    values["overrides"] = dict(as_dict(values.get("overrides", {})))
    return build(ModelSection, "model", **values)


def lora_config(config) -> LoRAConfig:
    """The validated `lora` section (rank 0: full fine-tuning); a config without one
    trains every weight."""
    section = config.get("lora", {})
    return build(LoRAConfig, "lora", **known_fields(LoRAConfig, section, "lora"))


def chat_section(config) -> ChatSection:
    return build(ChatSection, "chat", **known_fields(ChatSection, config.chat, "chat"))


def data_config(config) -> DataConfig:
    """The validated `data` section (one-line errors naming config.data.<field>)."""
    values = known_fields(DataConfig, config.data, "data")
    values["options"] = dict(as_dict(values.get("options", {})))
    checked = build(DataConfig, "data", **values)
    resolve_path(checked.path, "data.path")
    return checked


def credit_config(config) -> CreditConfig:
    """The validated `credit` section (one-line errors naming config.credit.<field>)."""
    return build(CreditConfig, "credit", **known_fields(CreditConfig, config.credit, "credit"))


def filter_config(config, max_new_tokens: int) -> FilterConfig:
    filters = build(FilterConfig, "filters", **known_fields(FilterConfig, config.filters,
                                                             "filters"))
    if filters.overlong_cache > max_new_tokens:
        raise ValueError(f"config.filters.overlong_cache: {filters.overlong_cache} exceeds "
                         f"rollout.max_new_tokens={max_new_tokens}")
    return filters


def curriculum_config(config) -> CurriculumConfig:
    section = config.get("curriculum", {})
    return build(CurriculumConfig, "curriculum",
                 **known_fields(CurriculumConfig, section, "curriculum"))


RECIPES = ("env", "recipe")


def reward_recipe(config, num_turns: int) -> RewardRecipe | None:
    """The `reward` section: None for recipe "env" (the environment's rewards)."""
    section = dict(as_dict(config.reward))
    name = section.pop("recipe")
    if name not in RECIPES:
        raise ValueError(f"config.reward.recipe: unknown {name!r}; valid: {', '.join(RECIPES)}")
    if name == "env":
        return None
    return build(RewardRecipe, "reward", max_turns=num_turns, **section)


def env_section(config) -> EnvSection:
    """The validated `env` section (one-line errors naming config.env.<field>)."""
    values = known_fields(EnvSection, config.env, "env")
    for key in ("options", "reward_points", "expert_options"):
        if key in values:
            values[key] = dict(as_dict(values[key]))
    return build(EnvSection, "env", **values)


def mesh_config(config) -> MeshConfig:
    """The validated `mesh` section (a config without one means "auto")."""
    section = config.get("mesh", None) if hasattr(config, "get") else None
    values = {} if section is None else as_dict(section)
    unknown = sorted(set(values) - {"shape"})
    if unknown:
        raise ValueError(f"config.mesh: unknown field(s) {unknown}; valid: ['shape']")
    try:
        return MeshConfig(**values)
    except (TypeError, ValueError) as e:
        raise ValueError(f"config.mesh.shape: {e}") from None
