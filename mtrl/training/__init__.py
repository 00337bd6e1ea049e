"""Training: optimizer, train state and jitted RL step, SFT warm start, evaluation,
checkpointing, logging, pictures, and the trainer loop (mtrl.training.trainer, imported
on demand: it pulls in the environment and the sampler)."""

from mtrl.training.checkpointing import DEFAULT_METRIC, CheckpointKeeper, Restored
from mtrl.training.logging import (HELDOUT_SUCCESS, HELDOUT_SUCCESS_TURN, KL, REWARD_MEAN,
                                   STEP_TIME, MetricsLogger, Progress, read_metrics, summary,
                                   write_transcripts)
from mtrl.training.plots import best_step_of, plot_learning_curve
from mtrl.training.evaluation import EvalResult, chain_success, evaluate
from mtrl.training.optim import SCHEDULES, OptimConfig, make_optimizer, make_schedule
from mtrl.training.sft import (SFTConfig, SFTExamples, SFTStep, make_sft_step, masked_nll,
                               run_sft, sft_batches, sft_examples, sft_loss)
from mtrl.training.train_state import TrainState, agent_params, init_train_state
from mtrl.training.train_step import (PolicyMinibatch, TrainStep, check_finite,
                                      make_train_step, policy_minibatch, ppo_update,
                                      sequence_logprobs, take_rows)
