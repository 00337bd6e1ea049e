"""The `filters` section: DAPO's overlong penalty and SimpleTIR's void-turn filter on a
rollout batch (the library functions are mtrl.credit.filters).

overlong (Yu et al. 2025, DAPO): a completion of L sampled tokens loses
  −dapo_overlong_penalty(L, L_max = rollout.max_new_tokens, L_cache = filters.overlong_cache)
from its own return before the baseline (0 up to L_max − L_cache, then a ramp to 1).

void_turns (Xue et al. 2025, SimpleTIR): a completion is void when the environment
reports it has neither a complete code block nor a final answer (step info "void": one
flag per agent). Void completions and every row of the subtree that continues from a
void completion leave the loss (their loss mask is cleared; the rule is loss_mask.py's
void_turns, one filter of the loss mask's pipeline); SimpleTIR drops the whole
trajectory, and in a tree the steps before the void one are shared with other paths,
so they stay.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from mtrl.config.fields import check_bool, check_int
from mtrl.credit import dapo_overlong_penalty
from mtrl.rollout.batch import RolloutBatch
from mtrl.training.advantages.reference_pass import ReferencePass, rows_to_turns


@dataclasses.dataclass(frozen=True)
class FilterConfig:
    """overlong_cache: DAPO's L_cache in tokens (0: off). void_turns: SimpleTIR's filter."""

    overlong_cache: int = 0
    void_turns: bool = False

    def __post_init__(self):
        check_int("overlong_cache", self.overlong_cache, 0)
        check_bool("void_turns", self.void_turns)


def completion_lengths(batch: RolloutBatch) -> np.ndarray:
    """[N, C] sampled tokens of each row (truncated rows included)."""
    return np.asarray(jax.device_get((batch.turn_index > 0).sum(axis=-1)))


def overlong_penalty(batch: RolloutBatch, max_length: int, cache: int,
                     num_tasks: int) -> list[np.ndarray]:
    """Per turn [P, J^(t−1), N, G] return penalties (>= 0) of DAPO's overlong shaping."""
    lengths = completion_lengths(batch)
    penalty = -np.asarray(dapo_overlong_penalty(lengths, max_length, cache))
    real = np.asarray(batch.row_turn) > 0
    return rows_to_turns(np.where(real[None], penalty, 0.0), batch, num_tasks)


def return_penalties(batch: RolloutBatch, state, *, filters: FilterConfig,
                     max_new_tokens: int, reference: ReferencePass | None,
                     num_tasks: int) -> list | None:
    """Per turn [P, J^(t−1), N, G]: the summed per-completion return penalties (the KL
    of kl_in=reward through the reference pass, DAPO's overlong), or None when none
    is on. Read after the loss mask's filters (stage.py)."""
    parts = []
    if reference is not None:
        parts.append(reference.penalty(state, batch, num_tasks))
    if filters.overlong_cache:
        parts.append(overlong_penalty(batch, max_new_tokens, filters.overlong_cache, num_tasks))
    if not parts:
        return None
    return [sum(turn) for turn in zip(*parts)]
