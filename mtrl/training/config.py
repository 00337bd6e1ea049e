"""Experiment configuration: one ml_collections ConfigDict per run, validated into the
components' frozen dataclasses with one-line errors naming the field.

`base_config()` holds every field with the embedded default's values; config files
in experiments/configs/ start from it and override what differs, some through blocks
they share (loaded with `module_from_file`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import pathlib
import types
from typing import Any

import ml_collections
from ml_collections.config_dict import placeholder

from mtrl.config.fields import (as_dict, build, check_bool, check_int,  # noqa: F401 (re-exported)
                                check_number, known_fields)


def base_config() -> ml_collections.ConfigDict:
    c = ml_collections.ConfigDict()
    c.seed = 0
    c.model = dict(preset="tiny", hf_checkpoint="", dtype="float32", overrides={})
    c.tokenizer = "byte"  # "byte", or a local Hugging Face tokenizer directory
    # Per-agent system prompts for chat templates (training/chat.py; () : the template's).
    c.chat = dict(system_prompts=())
    # A task suite (mtrl.data.suite): train, validation (eval_split: chooses the best
    # checkpoint) and test ("" : none; evaluated once at the end) splits.
    c.data = dict(name="intfn", path="", train_split="train", eval_split="heldout",
                  test_split="", num_train=2000, num_eval=100, num_test=100, options={})
    # env.name: a builder in envs/registry.py; env.options: that environment's
    # own extras (the code environment's fields are the env.* below).
    c.env = dict(name="code", options={}, num_agents=2, feedback_mode="level_feedback", sandbox_slice=1,
                 history_mode="full", reward="level", templates="tiny",
                 # Point values of the code rewards (envs/code/rewards.py CodeRewardConfig
                 # fields, e.g. {"main_defined": 0.2}); {} keeps the defaults.
                 reward_points={},
                 feedback_style="compact", workers=0,
                 wall_s_per_test=2.0, expert="", expert_options={},
                 # A program passing every test ends its episode (no later turn); False:
                 # CoMLRL's fixed horizon, a solved branch keeps revising (envs/code/env.py).
                 end_on_success=False)
    c.rollout = dict(num_turns=2, num_generations=4, joint_mode="align",
                     termination_threshold=placeholder(float), discount=1.0, max_new_tokens=48,
                     max_context=288, temperature=1.0, top_p=1.0, top_k=0,
                     max_nodes_per_turn=4096, agent_params="separate",
                     env_groups=1)
    # credit / loss: fields of training/methods.py CreditConfig and build_objective
    # (docs/methods.md); eps_* unset means the chosen loss's own default.
    c.credit = dict(estimator="magrpo", baseline="mean", credit="sum", normalize_std=False,
                    turn_coef=1.0, lambda_on="turn", igpo_gain="prob",
                    igpo_normalization="joint", gigpo_omega=1.0, ufo_gamma=0.9,
                    ufo_penalty=0.5)
    # aggregation unset: the policy loss's own (its paper's, losses.PolicyLoss).
    c.loss = dict(policy_loss="reinforce", aggregation=placeholder(str),
                  kl_estimator="k3", kl_coef=0.0, eps_low=placeholder(float),
                  eps_high=placeholder(float), dual_clip=0.0, refuel_eta=1.0, kl_in="loss")
    c.filters = dict(overlong_cache=0, void_turns=False)  # training/filters.py
    # training/curriculum.py: TCOD turn schedule and the learnable-band task sampler.
    c.curriculum = dict(tcod="", steps_per_stage=10, learnable_band=False, band_low=0.1,
                        band_high=0.9, band_window=16, band_min_attempts=1)
    # reward: "env" (the environment's rewards) or "recipe" (training/recipe.py).
    c.reward = dict(recipe="env", success_reward=1.0, failure_reward=-1.0, step_penalty=0.01,
                    invalid_tool_penalty=0.05, progress_coef=0.0, on_dominance="raise")
    c.optim = dict(learning_rate=1e-4, warmup_steps=5, schedule="constant",
                   weight_decay=0.0, max_grad_norm=1.0)
    c.train = dict(steps=300, tasks_per_step=3, ppo_epochs=1, minibatches=1,
                   eval_interval=20, save_interval=20, keep_best=2, eval_samples=0,
                   num_transcripts=2, drop_zero_advantage=False, export_best=True,
                   restore="latest", budget_minutes=0.0, init_from="", packing="tree",
                   remat="none", pack_budget=0, off_policy=0)
    c.sft = dict(enabled=True, steps=400, batch_size=32, learning_rate=2e-3,
                 schedule="cosine", adam_b2=0.95, fraction=1.0, revision_fraction=0.1,
                 first_guess="", resubmit_fraction=0.0, first_phase="first_turn",
                 first_phase_steps=0, max_len=256, checkpoint_every=50)
    # The device mesh (mtrl/parallel): "auto" = every device on data, or "d,f,t" over
    # the data, fsdp and tensor axes (docs: BUILD.md, "Scale-out").
    c.mesh = dict(shape="auto")
    return c


def module_from_file(path: str | os.PathLike) -> types.ModuleType:
    """The Python file at `path` executed as a fresh module named after its stem (not
    entered in sys.modules).

    Config files are loaded by path (ml_collections' config_flags, the tests), not
    imported from a package, so what a config builds on (the shared blocks in
    experiments/configs/common/, another config) is loaded by path too.
    """
    path = pathlib.Path(path)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def resolve_path(value: str, field: str, must_exist: bool = True) -> str | None:
    """'' -> None; otherwise an expanded path that must exist (one-line error)."""
    if not value:
        return None
    path = os.path.expanduser(value)
    if must_exist and not os.path.exists(path):
        raise ValueError(f"config.{field}: path {value!r} does not exist")
    return path


RESTORE_MODES = ("latest", "best", "none")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """The `train` section: the RL loop's schedule, evaluation and checkpoints.

    steps: RL steps (0: warm start and the step-0 evaluation only).
    tasks_per_step: P, tasks rolled out per step.
    ppo_epochs / minibatches: passes over a step's rows, and minibatches per pass.
    eval_interval / save_interval: steps between held-out evaluations (ranked
      checkpoints) and between latest-only checkpoints.
    keep_best: ranked checkpoints kept. eval_samples: sampled completions per task
      for pass@k at evaluation (0: greedy only). num_transcripts: evaluation
      transcripts written per evaluation.
    drop_zero_advantage: train only on rows with a non-zero advantage on some loss
      token (REFUEL: whole pairs; row_filter.py). Not DAPO's dynamic sampling, which
      over-samples until every group's accuracy lies strictly between 0 and 1.
    export_best: write the best checkpoint as Hugging Face files at the end (runs
      loaded from a Hugging Face checkpoint only).
    restore: resume from the "latest" or "best" checkpoint in the workdir, or "none".
    budget_minutes: the run's expected time; exceeding it warns (0: no budget).
    init_from: a run's workdir whose latest weights replace the warm start ("": none).
    packing: how update rows are fed to the model (training/packing.py): "tree" (each
      shared prefix once), "rows" (rows packed into bins) or "none" (padded rows).
    remat: per-layer activation rematerialisation, "none" | "dots" | "full".
    pack_budget: the smallest packed bin in tokens (0: the longest row's bucket).
    off_policy: 1 grows step k+1's rollout in the background while step k's update
      runs (one step stale; the sampler's log-probabilities are π_old), 0 on-policy
      (training/async_rollout.py).
    """

    steps: int = 300
    tasks_per_step: int = 3
    ppo_epochs: int = 1
    minibatches: int = 1
    eval_interval: int = 20
    save_interval: int = 20
    keep_best: int = 2
    eval_samples: int = 0
    num_transcripts: int = 2
    drop_zero_advantage: bool = False
    export_best: bool = True
    restore: str = "latest"
    budget_minutes: float = 0.0
    init_from: str = ""
    packing: str = "tree"
    remat: str = "none"
    pack_budget: int = 0
    off_policy: int = 0

    def __post_init__(self):
        counts = dict(steps=0, tasks_per_step=1, ppo_epochs=1, minibatches=1, eval_interval=1,
                      save_interval=1, keep_best=1, eval_samples=0, num_transcripts=0)
        for name, least in counts.items():
            check_int(name, getattr(self, name), least)
        for name in ("drop_zero_advantage", "export_best"):
            check_bool(name, getattr(self, name))
        if self.restore not in RESTORE_MODES:
            raise ValueError(f"restore must be one of {RESTORE_MODES}, got {self.restore!r}")
        check_number("budget_minutes", self.budget_minutes, 0)
        # Imported here: loading a config file must not import jax (--help stays fast).
        from mtrl.models.remat import REMAT_POLICIES
        from mtrl.training.async_rollout import OFF_POLICY_LAGS
        from mtrl.training.packing import BUDGETS, PACKING_MODES
        if self.packing not in PACKING_MODES:
            raise ValueError(f"packing must be one of {PACKING_MODES}, got {self.packing!r}")
        if self.remat not in REMAT_POLICIES:
            raise ValueError(f"remat must be one of {sorted(REMAT_POLICIES)}, got {self.remat!r}")
        check_int("pack_budget", self.pack_budget, 0, BUDGETS[-1])
        if isinstance(self.off_policy, bool) or not isinstance(self.off_policy, int) \
                or self.off_policy not in OFF_POLICY_LAGS:
            raise ValueError(f"off_policy must be one of {OFF_POLICY_LAGS}, "
                             f"got {self.off_policy!r}")
        if not isinstance(self.init_from, str):
            raise ValueError(f"init_from must be a path or '', got {self.init_from!r}")


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


def _per_agent_value(value, name: str):
    """A number, or a sequence with one number per agent (checked against the agent
    count where the agents are known, sft_data.per_agent)."""
    if isinstance(value, (list, tuple)):
        value = tuple(value)
        items = value
    else:
        items = (value,)
    if not items or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in items):
        raise ValueError(f"{name} must be a number or one number per agent, got {value!r}")
    return value


@dataclasses.dataclass(frozen=True)
class SFTSection:
    """The `sft` section: the warm start (Trainer.warm_start, sft.py).

    enabled: run SFT before RL. steps / batch_size / learning_rate / schedule /
      adam_b2 / max_len: the SFT optimisation (per agent). fraction: share of the
      train tasks with a first-turn demonstration. revision_fraction,
      resubmit_fraction: per agent (a number or one per agent), the suite's
      revision demonstrations and the weak teacher's resubmissions. first_guess:
      the suite's teacher's fixed first answer ("": none). first_phase /
      first_phase_steps: the row kind (per agent) trained alone for the first K
      updates. checkpoint_every: updates between SFT checkpoints.
    """

    enabled: bool = True
    steps: int = 400
    batch_size: int = 32
    learning_rate: float = 2e-3
    schedule: str = "cosine"
    adam_b2: float = 0.95
    fraction: float = 1.0
    revision_fraction: Any = 0.1
    first_guess: str = ""
    resubmit_fraction: Any = 0.0
    first_phase: Any = "first_turn"
    first_phase_steps: int = 0
    max_len: int = 256
    checkpoint_every: int = 50

    def __post_init__(self):
        check_bool("enabled", self.enabled)
        for name, least in dict(steps=1, batch_size=1, max_len=2, checkpoint_every=1,
                                first_phase_steps=0).items():
            check_int(name, getattr(self, name), least)
        for name in ("learning_rate", "adam_b2", "fraction"):
            check_number(name, getattr(self, name), above=0)
        for name in ("revision_fraction", "resubmit_fraction"):
            object.__setattr__(self, name, _per_agent_value(getattr(self, name), name))
        if not isinstance(self.first_guess, str):
            raise ValueError(f"first_guess must be a term name or '', got {self.first_guess!r}")
        if isinstance(self.first_phase, list):
            object.__setattr__(self, "first_phase", tuple(self.first_phase))
        if self.enabled and not self.first_phase_steps < self.steps:
            raise ValueError(f"first_phase_steps must lie in [0, sft.steps={self.steps}), "
                             f"got {self.first_phase_steps}")


def sft_config(config) -> SFTSection:
    """The validated `sft` section (one-line errors naming config.sft.<field>)."""
    return build(SFTSection, "sft", **known_fields(SFTSection, config.sft, "sft"))


@dataclasses.dataclass(frozen=True)
class ModelSection:
    """The `model` section: a preset (trained from scratch) or a local Hugging Face
    checkpoint ("" : the preset), its dtype and field overrides."""

    preset: str = "tiny"
    hf_checkpoint: str = ""
    dtype: str = "float32"
    overrides: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        for name in ("preset", "hf_checkpoint", "dtype"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a string, got {getattr(self, name)!r}")
        if not isinstance(self.overrides, dict):
            raise ValueError(f"overrides must be a dict, got {self.overrides!r}")


def model_config(config) -> ModelSection:
    values = known_fields(ModelSection, config.model, "model")
    values["overrides"] = dict(as_dict(values.get("overrides", {})))
    return build(ModelSection, "model", **values)
