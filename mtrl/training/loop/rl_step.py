"""One RL step's learning from its tree, as named stages over one rollout:

    grown tree ──score──► tree (+ IGPO's answer log-probs)
               ──advantages──► StepRollout (tree + its rows, loss mask filtered)
                               + per-token advantages
               ──update──► new train state + the update's metrics

From the advantages stage on, the step is one StepRollout (rollout/step_rollout.py):
the tree and the rows laid out from it, passed together as one value.

The trainer grows the tree before (on-policy, or taken from the background rollout)
and evaluates and saves after (trainer.py `run`). Each stage is one call here, so the
step reads top to bottom; what a stage does lives in its own package (score/answer_probs.py,
advantages/penalties.py and estimators.py, update/row_groups.py and ppo_epochs.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

from mtrl.parallel.process_rollout import gather_rows, is_multiprocess
from mtrl.rollout import StepRollout
from mtrl.training.score.answer_probs import fill_answer_logprobs
from mtrl.training.run.build import Components
from mtrl.training.run.sections import TrainConfig
from mtrl.training.advantages.penalties import shape_rollout
from mtrl.training.run.keys import RunKeys
from mtrl.training.advantages.estimators import token_advantages
from mtrl.training.update.minibatch import policy_minibatch
from mtrl.training.update.ppo_epochs import ppo_update
from mtrl.training.update.row_filter import informative_rows
from mtrl.training.update.row_groups import check_groups, group_size, keep_informative_groups
from mtrl.training.update.step_metrics import check_finite


@dataclasses.dataclass(frozen=True)
class Update:
    """What the update stage did: `metrics` of its last minibatch ([] : no update ran),
    `rows` (None: every group was uninformative and dropped), `kept` rows and
    `informative` rows (a non-zero advantage on a loss token, before any filter)."""

    metrics: list
    rows: Any
    kept: int
    informative: int = 0

    @property
    def skipped(self) -> str | None:
        """Why no update ran, or None."""
        if self.metrics:
            return None
        return ("update skipped: no informative group" if self.rows is None
                else "update skipped: no trainable token")


@dataclasses.dataclass(frozen=True)
class Learner:
    """The stages after a tree is grown; everything they read is a field."""

    c: Components
    train: TrainConfig
    graphdef: Any
    step_fn: Any  # train_step.make_train_step's jitted step
    keys: RunKeys
    scores_answers: bool  # IGPO on an environment that reports the truth

    def score(self, tree, policies: list):
        """IGPO's answer log-probs under the current policies (score/answer_probs.py)."""
        if not self.scores_answers:
            return tree
        return fill_answer_logprobs(tree, self.graphdef, policies, self.c.tokenizer,
                                    self.c.turn_format)

    def advantages(self, tree, state, step: int) -> tuple[StepRollout, Any]:
        """(rollout, per-token advantages): the tree with its rows in one train-step
        shape, the loss mask through its pipeline (TCOD turns, void turns;
        loss_mask.py) and the return penalties (KL in the reward, overlong) into the
        estimator's advantages."""
        c = self.c
        rollout = StepRollout.of(tree, length=c.rollout.max_context)
        rollout, penalty = shape_rollout(c, self.graphdef, state, rollout,
                                         self.train.tasks_per_step // jax.process_count(), step)
        return rollout, token_advantages(c.credit, rollout, c.rollout.discount, penalty)

    def update(self, rollout: StepRollout, advantages, state, step: int):
        """(new state, Update): the PPO epochs over the step's rows (every process's),
        uninformative groups dropped with train.drop_zero_advantage; REFUEL's pairs
        move whole. A non-finite update fails naming the step."""
        cfg, batch = self.train, rollout.batch
        rows, kept = policy_minibatch(batch, advantages), batch.num_rows
        if is_multiprocess():  # every process updates on all processes' rows
            rows, kept = gather_rows(rows)
        unit = group_size(self.c.objective.loss)
        check_groups(batch, unit)
        informative = int(informative_rows(rows).sum())
        if cfg.drop_zero_advantage:
            rows, kept = keep_informative_groups(rows, unit,
                                                 min_rows=max(8, cfg.minibatches * unit))
        metrics = []
        if rows is not None:
            state, metrics = ppo_update(self.step_fn, state, rows, epochs=cfg.ppo_epochs,
                                        minibatches=cfg.minibatches, key=self.keys.ppo(step),
                                        group_size=unit)
        try:
            check_finite(metrics)
        except FloatingPointError as e:
            raise FloatingPointError(f"step {step}: {e}") from None
        return state, Update(metrics, rows, kept, informative)
