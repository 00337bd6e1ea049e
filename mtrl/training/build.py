"""Builds a run's components from its validated config: tokenizer, one model per
agent, tasks, the code environment, the rollout config, the training objective."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import jax
from flax import nnx

from mtrl.data.suite import SPLITS, DataConfig, TaskSuite, build_suite
from mtrl.envs.code import CodeEnv, CodeEnvConfig
from mtrl.envs.sandbox import Limits, SandboxPool
from mtrl.losses import (KLPenaltyConfig, POLICY_LOSSES, PolicyObjectiveConfig, PPOClipConfig)
from mtrl.models import PRESETS, Transformer, load_hf_checkpoint
from mtrl.rollout import ChatTemplateFormat, PlainFormat, RolloutConfig
from mtrl.tokenizers import load_tokenizer
from mtrl.training.config import (ModelSection, as_dict, build, known_fields, model_config,
                                  resolve_path)
from mtrl.training.keys import RunKeys
from mtrl.training.optim import OptimConfig



@dataclasses.dataclass
class Components:
    tokenizer: Any
    turn_format: Any
    models: list[Transformer]  # one per agent (one if shared)
    from_hf: str | None  # checkpoint directory the weights came from
    suite: TaskSuite
    train_tasks: list
    eval_tasks: list  # validation: chooses the best checkpoint
    test_tasks: list  # evaluated once, for the chosen checkpoint ([]: none)
    env: CodeEnv
    pool: SandboxPool
    rollout: RolloutConfig
    objective: PolicyObjectiveConfig
    optim: OptimConfig

    def close(self) -> None:
        self.env.close()
        self.pool.close()


def build_tokenizer(config, m: ModelSection):
    spec = config.tokenizer
    if spec != "byte":
        spec = resolve_path(spec, "tokenizer")
    elif m.hf_checkpoint and os.path.exists(
            os.path.join(os.path.expanduser(m.hf_checkpoint), "tokenizer_config.json")):
        spec = os.path.expanduser(m.hf_checkpoint)
    return load_tokenizer(spec)


def build_models(config, m: ModelSection, num_policies: int
                 ) -> tuple[list[Transformer], str | None]:
    path = resolve_path(m.hf_checkpoint, "model.hf_checkpoint")
    overrides = dict(m.overrides)
    if path is not None:
        try:
            model = load_hf_checkpoint(path, **overrides)
        except (ValueError, FileNotFoundError) as e:
            raise ValueError(f"config.model.hf_checkpoint: {e}") from None
        # Every agent starts from the same checkpoint (separate copies when stacked).
        state = nnx.split(model)[1]
        return [model] + [nnx.merge(nnx.split(model)[0], jax.tree.map(lambda x: x.copy(), state))
                          for _ in range(num_policies - 1)], path
    if not m.preset:
        raise ValueError("config.model.hf_checkpoint: required (a local Hugging Face checkpoint "
                         "directory with config.json and *.safetensors)")
    if m.preset not in PRESETS:
        raise ValueError(f"config.model.preset: unknown {m.preset!r}; valid: {PRESETS.names()}")
    model_config = build(PRESETS.get(m.preset).replace, "model.overrides",
                         dtype=m.dtype, **overrides)
    keys = RunKeys.from_seed(config.seed)
    return [Transformer(model_config, rngs=nnx.Rngs(keys.init(a)))
            for a in range(num_policies)], None


def data_config(config) -> DataConfig:
    """The validated `data` section (one-line errors naming config.data.<field>)."""
    values = known_fields(DataConfig, config.data, "data")
    values["options"] = dict(as_dict(values.get("options", {})))
    checked = build(DataConfig, "data", **values)
    resolve_path(checked.path, "data.path")
    return checked


def build_tasks(suite: TaskSuite) -> tuple[list, list, list]:
    """(train, validation, test) tasks of the suite (test may be empty)."""
    try:
        train, held, test = (suite.tasks(split) for split in SPLITS)
    except KeyError as e:
        raise ValueError(f"config.data: {e.args[0]}") from None
    except (ValueError, FileNotFoundError, OSError) as e:
        message = str(e)
        raise ValueError(message if message.startswith("config.") else f"config.data: {e}"
                         ) from None
    if not train or not held:
        raise ValueError(f"config.data: empty split (train {len(train)}, eval {len(held)})")
    return train, held, test


def build_objective(config) -> PolicyObjectiveConfig:
    loss = config.loss
    if loss.policy_loss not in POLICY_LOSSES:
        raise ValueError(f"config.loss.policy_loss: unknown {loss.policy_loss!r}; valid: "
                         f"{POLICY_LOSSES.names()}")
    loss_config = None
    if loss.policy_loss == "ppo":
        loss_config = build(PPOClipConfig, "loss", eps_low=loss.eps_low, eps_high=loss.eps_high,
                            dual_clip=loss.dual_clip or None)
    kl = build(KLPenaltyConfig, "loss.kl_coef", estimator=loss.kl_estimator, coef=loss.kl_coef)
    return build(PolicyObjectiveConfig, "loss", loss=loss.policy_loss, loss_config=loss_config,
                 aggregation=loss.aggregation, kl=kl)


def build_components(config) -> Components:
    rollout = build(RolloutConfig, "rollout", num_agents=config.env.num_agents,
                    **known_fields(RolloutConfig, config.rollout, "rollout"))
    try:  # a tree too large for the node cap fails here, before models are built
        rollout.check_capacity(config.train.tasks_per_step)
    except ValueError as e:
        raise ValueError(f"config.rollout: {e} (with train.tasks_per_step="
                         f"{config.train.tasks_per_step})") from None
    objective = build_objective(config)
    optim = build(OptimConfig, "optim", total_steps=max(1, config.train.steps),
                  **as_dict(config.optim))
    model = model_config(config)
    tokenizer = build_tokenizer(config, model)
    fmt = (ChatTemplateFormat.from_tokenizer(tokenizer, tokenizer.decode([tokenizer.eos_id]))
           if tokenizer.has_chat_template else PlainFormat())
    num_policies = 1 if rollout.agent_params == "shared" else rollout.num_agents
    models, from_hf = build_models(config, model, num_policies)
    if tokenizer.vocab_size > models[0].config.vocab_size:
        raise ValueError(f"config.tokenizer: vocabulary {tokenizer.vocab_size} exceeds the "
                         f"model's {models[0].config.vocab_size}")
    try:
        suite = build_suite(data_config(config), config.seed)
    except ValueError as e:  # the family's own checks (FamilyConfig) name no field
        message = str(e)
        raise ValueError(message if message.startswith("config.") else f"config.data: {e}"
                         ) from None
    train_tasks, eval_tasks, test_tasks = build_tasks(suite)
    try:
        templates = suite.templates(config.env.templates)
    except ValueError as e:
        raise ValueError(f"config.env.templates: {e}") from None
    e = config.env
    limits = build(Limits, "env.wall_s_per_test", wall_s_per_test=e.wall_s_per_test)
    pool = SandboxPool(num_workers=e.workers or None, limits=limits)
    env_config = build(CodeEnvConfig, "env", num_agents=e.num_agents,
                       feedback_mode=e.feedback_mode, sandbox_slice=e.sandbox_slice,
                       history_mode=e.history_mode, reward=e.reward, limits=limits,
                       feedback_style=e.feedback_style,
                       templates=templates)
    env = CodeEnv(env_config, sandbox=pool)
    return Components(tokenizer=tokenizer, turn_format=fmt, models=models, from_hf=from_hf,
                      suite=suite, train_tasks=train_tasks, eval_tasks=eval_tasks,
                      test_tasks=test_tasks, env=env, pool=pool,
                      rollout=rollout, objective=objective, optim=optim)
