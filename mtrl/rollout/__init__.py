"""Multi-turn, multi-agent tree rollouts (docs/design.md sections 1-2)."""

from mtrl.rollout.backend import Contexts, PolicyBackend, Samples
from mtrl.rollout.batch import RolloutBatch, make_batch, round_up_pow2
from mtrl.rollout.config import RolloutConfig
from mtrl.rollout.formatting import ChatTemplateFormat, PlainFormat
from mtrl.rollout.generator import rollout
from mtrl.rollout.step_rollout import StepRollout
from mtrl.rollout.tree import TreeRollout, TurnRecord
