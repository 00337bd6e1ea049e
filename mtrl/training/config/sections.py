"""What each config section is made of: its typed dataclass, the fields the run fills
from elsewhere, the run's own defaults where they differ from the dataclass's (a
library component's default is not always a run's), and, for the sections whose
options belong to registry entries (credit, loss, env), those entries' options.

`section_defaults(name)` is a section's every field with its default, each written
once: in the dataclass, in RUN_DEFAULTS, or in an entry's options type. base_config()
is generated from it (generate.py writes defaults_table.py, jax-free, so loading an
experiment config imports no jax; a test checks the table is current).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from mtrl.config.options import OptionsDecl, field_default, field_type, section_options
from mtrl.credit import RewardRecipe
from mtrl.data.suite import DataConfig
from mtrl.envs.registry import EnvSection, env_options
from mtrl.losses import loss_options
from mtrl.models.lora import LoRAConfig
from mtrl.parallel.mesh import MeshConfig
from mtrl.rollout import RolloutConfig
from mtrl.training.advantages.estimators import CreditConfig, estimator_options
from mtrl.training.advantages.penalties import FilterConfig
from mtrl.training.config.loss import LossSection
from mtrl.training.grow.curriculum import CurriculumConfig
from mtrl.training.run.chat import ChatSection
from mtrl.training.run.sections import ModelSection, SFTSection, TrainConfig
from mtrl.training.policy.optim import OptimConfig

# The run's top-level fields.
TOP_LEVEL = {"seed": 0, "tokenizer": "byte"}  # tokenizer: "byte" or a tokenizer directory
RECIPES = ("env", "recipe")  # reward.recipe: the environment's rewards, or RewardRecipe


@dataclasses.dataclass(frozen=True)
class Spec:
    """A section: `cls`'s fields (`only` of them, less `exclude`), the run's defaults
    where they differ from cls's, fields with no dataclass field (`extra`, with
    defaults) and the options of a registry's entries (`options`)."""

    cls: type
    exclude: tuple[str, ...] = ()
    only: tuple[str, ...] | None = None
    run_defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    options: Callable[[], dict[str, OptionsDecl]] | None = None

    def fixed_fields(self) -> list[dataclasses.Field]:
        return [f for f in dataclasses.fields(self.cls) if f.name not in self.exclude
                and (self.only is None or f.name in self.only)]


SPECS: dict[str, Spec] = {
    "model": Spec(ModelSection),
    "chat": Spec(ChatSection),
    "data": Spec(DataConfig),
    "env": Spec(EnvSection, exclude=("options",), options=env_options),
    "rollout": Spec(RolloutConfig, exclude=("num_agents",),  # env.num_agents
                    run_defaults={"max_new_tokens": 48, "max_context": 288}),
    "credit": Spec(CreditConfig, exclude=("options",), options=estimator_options),
    "loss": Spec(LossSection, options=loss_options),
    "filters": Spec(FilterConfig),
    "curriculum": Spec(CurriculumConfig),
    "reward": Spec(RewardRecipe, exclude=("max_turns", "max_invalid_calls"),  # rollout's
                   run_defaults={"on_dominance": "raise"}, extra={"recipe": "env"}),
    "optim": Spec(OptimConfig, only=("learning_rate", "warmup_steps", "schedule",
                                     "weight_decay", "max_grad_norm"),
                  run_defaults={"warmup_steps": 5}),
    "train": Spec(TrainConfig),
    "sft": Spec(SFTSection),
    "lora": Spec(LoRAConfig),  # rank 0: full fine-tuning
    "mesh": Spec(MeshConfig),
}


def section_defaults(name: str) -> dict[str, Any]:
    """{field: default} of section `name` (module docstring)."""
    spec = SPECS[name]
    out = dict(spec.extra)
    for f in spec.fixed_fields():
        out[f.name] = spec.run_defaults.get(f.name, field_default(f))
    if spec.options is not None:
        out.update(section_options(spec.options()))
    return out


def section_types(name: str) -> dict[str, str]:
    """{field: type name} of section `name`'s fields whose default is None (their type
    lets the command line set them: ml_collections placeholders)."""
    spec, out = SPECS[name], {}
    defaults = section_defaults(name)
    for f in spec.fixed_fields():
        if defaults[f.name] is None:
            out[f.name] = field_type(spec.cls, f.name).__name__
    for decl in (spec.options() if spec.options is not None else {}).values():
        for config_name, f in decl.fields().items():
            if defaults.get(config_name) is None and config_name not in out:
                out[config_name] = field_type(decl.options, f.name).__name__
    return out
