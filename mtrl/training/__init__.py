"""Training: optimizer, train state and jitted RL step, SFT warm start, evaluation,
checkpointing, logging, pictures, and the trainer loop (mtrl.training.trainer).

The public names below are imported on first use (PEP 562), so that importing a
light submodule such as `mtrl.training.config` (what every experiment config file
does) pulls in neither jax nor orbax: `python -m mtrl.train --help` stays fast.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "checkpointing": ("DEFAULT_METRIC", "CheckpointKeeper", "Restored"),
    "logging": ("HELDOUT_SUCCESS", "HELDOUT_SUCCESS_TURN", "KL", "REWARD_MEAN", "STEP_TIME",
                "MetricsLogger", "Progress", "read_metrics", "summary", "write_transcripts"),
    "plots": ("best_step_of", "plot_learning_curve"),
    "evaluation": ("EvalResult", "chain_success", "evaluate"),
    "optim": ("SCHEDULES", "OptimConfig", "make_optimizer", "make_schedule"),
    "sft": ("SFTConfig", "SFTExamples", "SFTStep", "make_sft_step", "masked_nll", "run_sft",
            "sft_batches", "sft_examples", "sft_loss"),
    "train_state": ("TrainState", "agent_params", "init_train_state"),
    "train_step": ("TrainStep", "make_train_step"),
    "minibatch": ("PolicyMinibatch", "policy_minibatch", "take_rows"),
    "logprobs": ("sequence_logprobs",),
    "step_metrics": ("check_finite",),
    "ppo_epochs": ("ppo_update",),
}
_OWNER = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_OWNER)


def __getattr__(name: str):
    if name not in _OWNER:
        raise AttributeError(f"module 'mtrl.training' has no attribute {name!r}")
    return getattr(importlib.import_module(f"mtrl.training.{_OWNER[name]}"), name)
