"""Credit methods selectable by name: `credit.estimator` -> per-agent completion advantages.

Every estimator maps the step's rollout (a StepRollout: its host tree and its dense
batch) to, per turn t, [P] + [J]*(t−1) + [N, G] advantages of each agent's
completions; `token_advantages` gathers them into rows (mtrl.credit.row_advantages)
and broadcasts them over the row's loss tokens. Two kinds (docs/methods.md has the
table with the papers):

  tree estimators   magrpo, grpo, dr_grpo, rloo (tree_estimators.py)
  path estimators   mt_grpo, igpo, gigpo, ufo (path_estimators.py)

Each registry entry (registry.py Estimator) declares its kind, the environment info
keys it reads, whether its paper's episodes end at the first success, its options,
whether its returns are unscaled and the fewest samples per node it needs; the config
rules (training/config/rules.py) compare them with the environment and the loss, and
no consumer keeps a list of estimator names. (CREDIT_ESTIMATORS holds whole credit
methods; the group functions they apply are mtrl.credit's GROUP_ADVANTAGES, the KL's
k1..k3 are mtrl.losses' KL_ESTIMATORS.)
"""

from __future__ import annotations

import jax.numpy as jnp

from mtrl.credit import row_advantages
from mtrl.rollout.step_rollout import StepRollout
# The registry's names, re-exported for the stage and the config (the registry loads
# tree_estimators.py and path_estimators.py itself, on its first read).
from mtrl.training.advantages.registry import (CREDIT_ESTIMATORS, ESTIMATOR_KINDS,  # noqa: F401
                                               CreditConfig, Estimator, NoOptions,
                                               estimator_options, tree_estimators)


def method_advantages(credit: CreditConfig, rollout: StepRollout, gamma, penalty=None) -> list:
    """Per turn [P] + [J]*(t−1) + [N, G] advantages of the configured estimator
    (penalty: per-completion return penalties, tree estimators only)."""
    return credit.entry.fn(rollout, credit, gamma, penalty)


def token_advantages(credit: CreditConfig, rollout: StepRollout, gamma,
                     penalty=None) -> jnp.ndarray:
    """[N, C, L] float32: each row's advantage on its loss tokens, 0 elsewhere (what
    the trainer feeds the loss)."""
    per_turn = method_advantages(credit, rollout, gamma, penalty)
    batch = rollout.batch
    rows = row_advantages(per_turn, batch.row_turn, batch.row_node, batch.row_sample)
    return rows[:, :, None] * batch.loss_mask
