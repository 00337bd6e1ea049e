"""One typed root config, parsed once: `parse(ConfigDict) -> RunConfig`.

The raw ml_collections config (an experiment file plus `--config.*` overrides) is read
here and by the section readers this calls (readers.py, loss.py), nowhere else outside
this package: the build (build.build_components), the environment builders
(envs/registry.py EnvRequest) and the trainer take the frozen RunConfig. Every check
that needs only the config runs here, once, before any model, data or sandbox work,
and fails in one line naming the field; checks that need a built object (the
environment's step info, the tokenizer's vocabulary, the model's memory) run in the
build.

    run = parse(get_config())          # one-line ValueError on a bad field
    run.rollout.num_generations        # typed sections (see RunConfig)
    run.record                         # the resolved config as JSON data (config.json)
"""

from __future__ import annotations

import dataclasses

from mtrl.config.fields import build, known_fields
from mtrl.credit import RewardRecipe
from mtrl.data.demonstrations import per_agent
from mtrl.data.suite import DataConfig
from mtrl.envs.registry import EnvSection, check_env_fields, ends_on_success
from mtrl.losses import KLPenaltyConfig, PolicyObjectiveConfig
from mtrl.models.lora import LoRAConfig
from mtrl.parallel.mesh import MeshConfig
from mtrl.parallel.process_rollout import check_supported
from mtrl.rollout import RolloutConfig
from mtrl.rollout.batch import round_up_pow2
from mtrl.training.run.chat import ChatSection
from mtrl.training.config.loss import build_objective, build_reward_kl, kl_place
from mtrl.training.config.readers import (chat_section, credit_config, curriculum_config,
                                          data_config, env_section, filter_config,
                                          lora_config, mesh_config, model_config,
                                          reward_recipe, sft_config, train_config)
from mtrl.training.config.record import config_record
from mtrl.training.grow.curriculum import CurriculumConfig
from mtrl.training.advantages.penalties import FilterConfig
from mtrl.training.advantages.estimators import (CREDIT_ESTIMATORS, CreditConfig, check_group_size,
                                                tree_estimators)
from mtrl.training.update.optim import OptimConfig
from mtrl.training.update.row_groups import group_size
from mtrl.training.run.sections import ModelSection, SFTSection, TrainConfig
from mtrl.training.sft.sft_data import first_phase_kinds


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
    objective: PolicyObjectiveConfig  # config.loss: the policy loss, its clip, the KL
    kl_in: str  # "loss" or "reward" (where loss.kl_coef's penalty goes)
    reward_kl: KLPenaltyConfig | None  # loss.kl_in=reward: β·KL_i off each return
    credit: CreditConfig
    filters: FilterConfig
    recipe: RewardRecipe | None  # reward.recipe: the episode reward replacing the env's
    curriculum: CurriculumConfig
    optim: OptimConfig
    train: TrainConfig
    sft: SFTSection
    mesh: MeshConfig
    record: dict = dataclasses.field(repr=False, compare=False)  # config.json's content

    @property
    def num_agents(self) -> int:
        return self.rollout.num_agents


def parse(config) -> RunConfig:
    """The RunConfig of a raw config (a RunConfig is returned as it is)."""
    if isinstance(config, RunConfig):
        return config
    if isinstance(config.get("seed"), bool) or not isinstance(config.get("seed"), int):
        raise ValueError(f"config.seed: must be an int, got {config.get('seed')!r}")
    env = env_section(config)
    check_env_fields(env)  # a known name; no field set that it would ignore
    rollout = build(RolloutConfig, "rollout", num_agents=env.num_agents,
                    **known_fields(RolloutConfig, config.rollout, "rollout"))
    train = train_config(config)
    try:  # a tree too large for the node cap fails here, before models are built
        rollout.check_capacity(train.tasks_per_step)
    except ValueError as e:
        raise ValueError(f"config.rollout: {e} (with train.tasks_per_step="
                         f"{train.tasks_per_step})") from None
    objective = build_objective(config)
    check_minibatches(train.minibatches, train.tasks_per_step, rollout.num_generations,
                      group_size(objective.loss))
    credit = credit_config(config)
    check_group_size(credit, rollout.num_generations)
    check_episode_end(credit, env)
    filters = filter_config(config, rollout.max_new_tokens)
    kl_in = kl_place(config)
    if (filters.overlong_cache or kl_in == "reward") and \
            CREDIT_ESTIMATORS.get(credit.estimator).kind != "tree":
        raise ValueError(f"config.credit.estimator: return penalties (filters.overlong_cache, "
                         f"loss.kl_in=reward) need a tree estimator "
                         f"({', '.join(tree_estimators())}), got {credit.estimator!r}")
    sft = sft_config(config)
    check_sft_agents(sft, rollout)
    check_supported(off_policy=bool(train.off_policy), init_from=train.init_from,
                    tasks_per_step=train.tasks_per_step)
    return RunConfig(
        seed=config.seed, tokenizer=config.tokenizer, model=model_config(config),
        lora=lora_config(config), chat=chat_section(config), data=data_config(config), env=env, rollout=rollout,
        objective=objective, kl_in=kl_in, reward_kl=build_reward_kl(config), credit=credit,
        filters=filters, recipe=reward_recipe(config, rollout.num_turns),  # dominance here
        curriculum=curriculum_config(config),
        optim=build(OptimConfig, "optim", total_steps=max(1, train.steps),
                    **known_fields(OptimConfig, config.optim, "optim")),
        train=train, sft=sft, mesh=mesh_config(config), record=config_record(config))


def check_minibatches(minibatches: int, tasks_per_step: int, num_generations: int,
                      unit: int) -> None:
    """One-line error unless train.minibatches splits every step's rows evenly.

    A step's batch has a power-of-two number of rows, at least
    round_up_pow2(tasks_per_step·G, 8) (make_batch pads to a power of two >= 8 and the
    turn-1 rows, P·G, are always there; the zero-advantage filter pads to one too), and
    ppo_update deals them into M equal minibatches of whole units (REFUEL: pairs). So M
    units must be a power of two no larger than the smallest batch. (With k processes
    the rows of all processes are gathered: k·b rows, a power of two when k is.)
    """
    smallest = round_up_pow2(tasks_per_step * num_generations, 8)
    rows = minibatches * unit
    if rows & (rows - 1) or rows > smallest:
        whole = " of whole pairs (REFUEL: 2 rows each)" if unit == 2 else ""
        raise ValueError(f"config.train.minibatches: {minibatches} does not split every step's "
                         f"rows into equal minibatches{whole}; a step has a power-of-two number "
                         f"of rows, at least {smallest} (train.tasks_per_step x "
                         f"rollout.num_generations, rounded up to a power of two >= 8), so use "
                         f"a power of two <= {smallest // unit}")


def check_episode_end(credit: CreditConfig, env: EnvSection) -> None:
    """One line when the estimator needs episodes that end at success and the
    environment keeps revising solved branches (the code environment by default)."""
    if CREDIT_ESTIMATORS.get(credit.estimator).ends_at_success and not ends_on_success(env):
        raise ValueError(f"config.credit.estimator: {credit.estimator!r} needs episodes that "
                         f"end at the first success; env {env.name!r} keeps revising "
                         "solved branches (set config.env.end_on_success=True)")


def check_sft_agents(sft: SFTSection, rollout: RolloutConfig) -> None:
    """Per-agent SFT fields fit the number of agents (and shared parameters train one
    policy, so one first-phase kind)."""
    kinds = first_phase_kinds(sft.first_phase, rollout.num_agents)
    for field in ("revision_fraction", "resubmit_fraction"):
        per_agent(getattr(sft, field), rollout.num_agents, field)
    if rollout.agent_params == "shared" and len(set(kinds)) > 1:
        raise ValueError("config.sft.first_phase: shared parameters train one policy, "
                         f"so give one kind, got {sft.first_phase!r}")

