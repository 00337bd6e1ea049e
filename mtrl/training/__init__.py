"""Training infrastructure: checkpointing, logging, pictures (trainer, SFT and
evaluation are added by their authors)."""

from mtrl.training.checkpointing import DEFAULT_METRIC, CheckpointKeeper, Restored
from mtrl.training.logging import (HELDOUT_SUCCESS, HELDOUT_SUCCESS_TURN, KL, REWARD_MEAN,
                                   STEP_TIME, MetricsLogger, Progress, read_metrics, summary,
                                   write_transcripts)
from mtrl.training.plots import best_step_of, plot_learning_curve
