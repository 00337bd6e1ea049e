"""Experiment configuration: one ml_collections ConfigDict per run, validated into the
components' frozen dataclasses with one-line errors naming the field.

`base_config()` holds every field with the embedded default's values; config files
in experiments/configs/ start from it and override what differs.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import ml_collections
from ml_collections.config_dict import placeholder


def base_config() -> ml_collections.ConfigDict:
    c = ml_collections.ConfigDict()
    c.seed = 0
    c.model = dict(preset="tiny", hf_checkpoint="", dtype="float32", overrides={})
    c.tokenizer = "byte"  # "byte", or a local Hugging Face tokenizer directory
    c.data = dict(name="intfn", path="", train_split="train", eval_split="heldout",
                  num_train=2000, num_eval=100, options={})
    c.env = dict(num_agents=2, feedback_mode="level_feedback", sandbox_slice=1,
                 history_mode="full", reward="level", templates="tiny",
                 feedback_style="compact", workers=0,
                 wall_s_per_test=2.0)
    c.rollout = dict(num_turns=2, num_generations=4, joint_mode="align",
                     termination_threshold=placeholder(float), discount=1.0, max_new_tokens=48,
                     max_context=288, temperature=1.0, top_p=1.0, top_k=0,
                     max_nodes_per_turn=4096, agent_params="separate")
    c.credit = dict(estimator="mean", credit="sum", normalize_std=False)
    c.loss = dict(policy_loss="reinforce", aggregation="seq-mean-token-sum",
                  kl_estimator="k3", kl_coef=0.0, eps_low=0.2, eps_high=0.28,
                  dual_clip=0.0)
    c.optim = dict(learning_rate=1e-4, warmup_steps=5, schedule="constant",
                   weight_decay=0.0, max_grad_norm=1.0)
    c.train = dict(steps=300, tasks_per_step=3, ppo_epochs=1, minibatches=1,
                   eval_interval=20, save_interval=20, keep_best=2, eval_samples=0,
                   num_transcripts=2, dynamic_sampling=False, export_best=True,
                   restore="latest", budget_minutes=0.0, init_from="")
    c.sft = dict(enabled=True, steps=400, batch_size=32, learning_rate=2e-3,
                 schedule="cosine", adam_b2=0.95, fraction=1.0, revision_fraction=0.1,
                 first_guess="", resubmit_fraction=0.0, first_phase="first_turn",
                 first_phase_steps=0, max_len=256, checkpoint_every=50)
    return c


def resolve_path(value: str, field: str, must_exist: bool = True) -> str | None:
    """'' -> None; otherwise an expanded path that must exist (one-line error)."""
    if not value:
        return None
    path = os.path.expanduser(value)
    if must_exist and not os.path.exists(path):
        raise ValueError(f"config.{field}: path {value!r} does not exist")
    return path


def build(cls, field: str, **kwargs) -> Any:
    """cls(**kwargs), re-raising validation errors with the config field named."""
    try:
        return cls(**kwargs)
    except (ValueError, TypeError, KeyError) as e:
        raise ValueError(f"config.{field}: {e}") from None


def as_dict(section) -> dict:
    return section.to_dict() if hasattr(section, "to_dict") else dict(section)


def known_fields(cls, section, field: str) -> dict:
    """The section's entries, which must all be fields of `cls`."""
    values = as_dict(section)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ValueError(f"config.{field}: unknown field(s) {unknown}; valid: {sorted(names)}")
    return values
