"""Run logging: scalar metrics (JSON lines + TensorBoard), progress, transcripts,
each step's episodes as training traces (traces.py) and the end-of-run summary."""

from mtrl.training.logging.metrics import (HELDOUT_SUCCESS, HELDOUT_SUCCESS_TURN, KL,
                                           METRICS_FILE, REWARD_MEAN, STEP_TIME,
                                           TENSORBOARD_DIR, MetricsLogger, read_metrics)
from mtrl.training.logging.progress import Progress, format_duration
from mtrl.training.logging.summary import summary
from mtrl.training.logging.transcripts import TRANSCRIPTS_DIR, write_transcripts
