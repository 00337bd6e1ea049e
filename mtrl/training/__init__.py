"""Training: optimizer, train state and jitted RL step, SFT warm start, evaluation,
checkpointing, logging, pictures, and the trainer loop (mtrl.training.loop.trainer).

One subpackage per concern, each importing only those below it (docs/design.md
section 5; the evidence package, mtrl.evidence, sits above this one):

  loop/          the trainer, its stage objects and loop state, budget, roles
  config/        the experiment config: parse(ConfigDict) -> RunConfig
  sft/           the SFT warm start: steps, data kinds, its checkpoints
  run/           what every stage shares: sections, chat format, components (build),
                 random streams, stop points, the workdir's config
  grow/          the grow stage: the task choice (band sampler), the rollout producer
  score/         the score stage: reward recipe, IGPO's answer probabilities
  advantages/    the advantages stage: estimators, penalties, the loss-mask pipeline,
                 the reference pass
  update/        the jitted RL update: rows (their groups and filter), packing,
                 log-probs, optimizer, PPO epochs
  publish/       the publish stage: the updated parameters to the sampler
  evaluate/      held-out evaluation, and its reduction across processes
  checkpoints/   RL checkpoints, typed keys in them, HF export, the run's record
  logging/       metrics, progress, summaries, transcripts, the learning curve

The public names below are imported on first use (PEP 562), so that importing a
light submodule such as `mtrl.training.config` (what every experiment config file
does) pulls in neither jax nor orbax: `python -m mtrl.train --help` stays fast.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "checkpoints.checkpointing": ("DEFAULT_METRIC", "CheckpointKeeper", "Restored"),
    "logging": ("HELDOUT_SUCCESS", "HELDOUT_SUCCESS_TURN", "KL", "REWARD_MEAN", "STEP_TIME",
                "MetricsLogger", "Progress", "read_metrics", "summary", "write_transcripts"),
    "logging.plots": ("best_step_of", "plot_learning_curve"),
    "evaluate.evaluation": ("EvalResult", "chain_success", "evaluate"),
    "policy.optim": ("SCHEDULES", "OptimConfig", "make_optimizer", "make_schedule"),
    "sft.sft": ("SFTConfig", "SFTExamples", "SFTStep", "make_sft_step", "masked_nll", "run_sft",
                "sft_batches", "sft_examples", "sft_loss"),
    "policy.train_state": ("TrainState", "agent_params", "init_train_state"),
    "update.train_step": ("TrainStep", "make_train_step"),
    "update.minibatch": ("PolicyMinibatch", "policy_minibatch", "take_rows"),
    "policy.logprobs": ("sequence_logprobs",),
    "update.step_metrics": ("check_finite",),
    "update.ppo_epochs": ("ppo_update",),
}
_OWNER = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_OWNER)


def __getattr__(name: str):
    if name not in _OWNER:
        raise AttributeError(f"module 'mtrl.training' has no attribute {name!r}")
    return getattr(importlib.import_module(f"mtrl.training.{_OWNER[name]}"), name)
