"""The step's stages, built once from the run's typed sections and built objects: each
stage object holds only what its stage reads (no Components bag reaches a stage).

    grow -> score -> advantages -> update -> publish      (evaluate and save: trainer.py)
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import jax

from mtrl.rollout.backend import PolicyBackend
from mtrl.training.advantages.estimators import CREDIT_ESTIMATORS
from mtrl.training.advantages.loss_mask import MaskSettings
from mtrl.training.advantages.reference_pass import ReferencePass
from mtrl.training.advantages.stage import AdvantageStage
from mtrl.training.grow.curriculum import StepTasks
from mtrl.training.grow.stage import GrowStage
from mtrl.training.publish.publisher import PublishStage
from mtrl.training.run.keys import RunKeys
from mtrl.training.score.answer_probs import scores_answers
from mtrl.training.score.stage import AnswerScorer, ScoreStage
from mtrl.training.update.row_groups import group_size
from mtrl.training.update.stage import UpdateStage


@dataclasses.dataclass(frozen=True)
class Stages:
    grow: GrowStage
    score: ScoreStage
    advantages: AdvantageStage
    update: UpdateStage
    publish: PublishStage


def build_stages(run, c, *, graphdef: Any, step_fn: Any, keys: RunKeys,
                 step_tasks: StepTasks, backends: Sequence[PolicyBackend]) -> Stages:
    """The stages of a run (`run`: its RunConfig; `c`: its built Components)."""
    # IGPO on an environment that reports the truth: score it after each rollout.
    answers = (AnswerScorer(graphdef, c.tokenizer, c.turn_format)
               if scores_answers(CREDIT_ESTIMATORS.get(run.credit.estimator).needs,
                                 frozenset(c.env.info_keys)) else None)
    num_policies = 1 if run.rollout.agent_params == "shared" else run.num_agents
    return Stages(
        grow=GrowStage(step_tasks, c.env, c.tokenizer, c.turn_format, run.rollout, keys.rollout),
        score=ScoreStage(run.reward, answers),
        advantages=AdvantageStage(
            credit=run.credit, rollout=run.rollout, filters=run.filters,
            mask=MaskSettings(run.curriculum, run.filters.void_turns, run.rollout.num_turns),
            reference=(ReferencePass(graphdef, run.loss.reward_kl)
                       if run.loss.reward_kl is not None else None),
            num_tasks=run.train.tasks_per_step // jax.process_count()),
        update=UpdateStage(step_fn, run.train.ppo_epochs, run.train.minibatches,
                        run.train.drop_zero_advantage, group_size(run.loss.objective.loss),
                        keys.ppo),
        publish=PublishStage(tuple(backends), num_policies))
