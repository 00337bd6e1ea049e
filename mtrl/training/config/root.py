"""One typed root config, parsed once: `parse(ConfigDict) -> RunConfig`.

The raw ml_collections config (an experiment file plus `--config.*` overrides) is read
here and by the section readers this calls (readers.py, loss.py), nowhere else outside
this package: the build (build.build_components), the environment builders
(envs/registry.py EnvRequest) and the trainer take the frozen RunConfig. Every check
that needs only the config runs here, once, before any model, data or sandbox work:
first each section's own (readers), then the rules across sections (rules.py), and
every error found is reported at once, one line each naming the field (ConfigErrors);
checks that need a built object (the environment's step info, the tokenizer's
vocabulary, the model's memory) run in the build.

    run = parse(get_config())          # ConfigErrors (a ValueError), one line per error
    run.rollout.num_generations        # typed sections (see RunConfig)
    run.record                         # the resolved config as JSON data (config.json)
"""

from __future__ import annotations

import dataclasses

from mtrl.config.fields import ConfigErrors, as_dict, build_all, check_int
from mtrl.credit import RewardRecipe
from mtrl.data.suite import DataConfig
from mtrl.envs.registry import EnvSection
from mtrl.models.lora import LoRAConfig
from mtrl.parallel.mesh import MeshConfig
from mtrl.rollout import RolloutConfig
from mtrl.training.advantages.estimators import CreditConfig
from mtrl.training.advantages.penalties import FilterConfig
from mtrl.training.config.loss import LossParts, read_loss
from mtrl.training.config.readers import (read_credit, read_data, read_env, read_optim,
                                          read_plain, read_reward, read_train,
                                          section_values)
from mtrl.training.config.record import config_record
from mtrl.training.config.rules import RULES, run_rules
from mtrl.training.config.sections import TOP_LEVEL
from mtrl.training.grow.curriculum import CurriculumConfig
from mtrl.training.run.chat import ChatSection
from mtrl.training.run.sections import ModelSection, SFTSection, TrainConfig
from mtrl.training.policy.optim import OptimConfig


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """A run's validated config: one frozen section per concern."""

    seed: int
    tokenizer: str  # "byte", or a Hugging Face tokenizer directory
    model: ModelSection
    lora: LoRAConfig  # rank 0: full fine-tuning
    chat: ChatSection
    data: DataConfig
    env: EnvSection
    rollout: RolloutConfig
    loss: LossParts  # the policy objective, where its KL goes (kl_in), the returns' KL
    credit: CreditConfig
    filters: FilterConfig
    reward: RewardRecipe | None  # reward.recipe: the episode reward replacing the env's
    curriculum: CurriculumConfig
    optim: OptimConfig
    train: TrainConfig
    sft: SFTSection
    mesh: MeshConfig
    record: dict = dataclasses.field(repr=False, compare=False)  # config.json's content

    @property
    def num_agents(self) -> int:
        return self.rollout.num_agents


def _top_level(config) -> tuple[dict, list[str]]:
    values, lines = {}, []
    for name in TOP_LEVEL:
        value = config.get(name)  # every config has them (base_config)
        if name == "seed":
            try:
                check_int("seed", value)
            except ValueError:
                lines.append(f"config.seed: must be an int, got {value!r}")
        elif not isinstance(value, str):
            lines.append(f"config.{name}: must be a name or a directory, got {value!r}")
        values[name] = value
    return values, lines


def parse(config) -> RunConfig:
    """The RunConfig of a raw config (a RunConfig is returned as it is); ConfigErrors
    with every error line when the config has any."""
    if isinstance(config, RunConfig):
        return config
    top, lines = _top_level(config)
    s: dict = {}

    def read(name, result):
        s[name], more = result
        lines.extend(more)

    read("env", read_env(config))
    rollout_values, more = section_values(config, "rollout")
    lines.extend(more)
    agents = s["env"].num_agents if s["env"] is not None else \
        as_dict(config.get("env", {})).get("num_agents", 1)
    agents_valid = isinstance(agents, int) and not isinstance(agents, bool) and agents >= 1
    agents = agents if agents_valid else 1  # a placeholder so rollout's own fields check
    read("rollout", build_all(RolloutConfig, "rollout", num_agents=agents, **rollout_values))
    turns = s["rollout"].num_turns if s["rollout"] is not None else None
    read("train", read_train(config))
    loss_values, more = section_values(config, "loss")
    lines.extend(more)
    read("loss", read_loss(loss_values, turns))
    read("credit", read_credit(config))
    read("filters", read_plain(config, "filters"))
    read("reward", read_reward(config, turns))  # the recipe's dominance check
    read("curriculum", read_plain(config, "curriculum"))
    read("optim", read_optim(config, s["train"]))
    read("sft", read_plain(config, "sft"))
    read("model", read_plain(config, "model"))
    read("lora", read_plain(config, "lora"))
    read("chat", read_plain(config, "chat"))
    read("data", read_data(config))
    read("mesh", read_plain(config, "mesh"))
    # Rules that count agents would report the placeholder's count as if it were the
    # user's (env.num_agents=0 then read "env.num_agents=1 needs ..."): skip them.
    lines += run_rules(RULES, s if agents_valid else {**s, "rollout": None})
    if lines:
        raise ConfigErrors(lines)
    return RunConfig(**top, **s, record=config_record(config))
