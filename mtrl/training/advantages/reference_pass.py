"""The reference pass (`loss.kl_in=reward`): a forward pass of the frozen reference
parameters over the step's rows, its KL as a per-completion return penalty.

CoMLRL (Liu et al. 2025) subtracts β·KL_i from each sequence's return instead of adding
β·k_t to the loss (mtrl.credit.kl_penalty):

  KL_i = Σ_{t ∈ completion i} k(π_old(y_t), π_ref(y_t))     (k = loss.kl_estimator)
  R'_i = R_i − β · KL_i, then the estimator's baseline over the G siblings.

π_old are the sampler's log-probs of the row (the policy that generated it), π_ref the
frozen initial parameters (TrainState.ref_params; LoRA: the base without adapters). `rows_to_turns` scatters the
[N, C] row values into the per-turn [P, J^(t−1), N, G] layout that
mtrl.credit.magrpo_advantages takes as `penalty`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mtrl.losses import KLPenaltyConfig, masked_kl
from mtrl.rollout.batch import RolloutBatch
from mtrl.training.policy.train_state import TrainState, agent_reference
from mtrl.training.policy.logprobs import predicted_mask, sequence_logprobs

def row_kl(graphdef, state: TrainState, batch: RolloutBatch, estimator: str) -> jax.Array:
    """[N, C] Σ over each row's loss tokens of k(π_old, π_ref)."""
    if state.ref_params is None or not state.reference:
        raise ValueError("kl_in=reward needs reference parameters (keep_reference=True)")
    out = []
    for a in range(batch.num_agents):
        ref = agent_reference(state, 0 if state.shared else a)
        ref_logp = sequence_logprobs(graphdef, ref, batch.tokens[a], batch.token_mask[a])
        mask = batch.loss_mask[a] & predicted_mask(batch.token_mask[a])
        out.append(jnp.sum(masked_kl(batch.old_logprobs[a], ref_logp, mask, estimator), axis=-1))
    return jnp.stack(out)


def rows_to_turns(values, batch: RolloutBatch, num_tasks: int) -> list[np.ndarray]:
    """[N, C] row values -> per turn t, [P] + [J]*(t−1) + [N, G] (0 where no row)."""
    values = np.asarray(jax.device_get(values), np.float32)
    turn, node, sample = (np.asarray(x) for x in (batch.row_turn, batch.row_node,
                                                  batch.row_sample))
    joint, n, g = batch.joint_index.shape[0], batch.num_agents, batch.num_generations
    out = []
    for t in range(1, len(batch.rewards) + 1):
        dense = np.zeros((num_tasks * joint ** (t - 1), n, g), np.float32)
        rows = np.flatnonzero(turn == t)
        dense[node[rows], :, sample[rows]] = values[:, rows].T
        out.append(dense.reshape((num_tasks,) + (joint,) * (t - 1) + (n, g)))
    return out


def reward_kl_penalty(graphdef, state: TrainState, batch: RolloutBatch, kl: KLPenaltyConfig,
                      num_tasks: int) -> list[np.ndarray]:
    """Per turn [P, J^(t−1), N, G]: β·KL_i of every completion (module docstring)."""
    return rows_to_turns(kl.coef * row_kl(graphdef, state, batch, kl.estimator), batch,
                         num_tasks)


@dataclasses.dataclass(frozen=True)
class ReferencePass:
    """The advantages stage's reference pass: the policies' graph and the penalty's
    estimator and β (loss.kl_estimator, loss.kl_coef)."""

    graphdef: Any
    kl: KLPenaltyConfig

    def penalty(self, state: TrainState, batch: RolloutBatch, num_tasks: int
                ) -> list[np.ndarray]:
        """Per turn [P, J^(t−1), N, G]: β·KL_i of every completion."""
        return reward_kl_penalty(self.graphdef, state, batch, self.kl, num_tasks)
