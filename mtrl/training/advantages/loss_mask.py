"""The RL loss mask's one pipeline: an ordered tuple of named filters, each a rule
`mask -> mask` on the step's [N, C, L] loss mask, applied in order by filter_loss_mask
(the advantages stage's first call, stage.py, before any return penalty or advantage
reads the mask).

The mask starts as rollout/batch.py makes it: the sampled tokens of rows that were not
truncated. Each filter only clears tokens (it ANDs a keep mask) and returns the mask
unchanged when its config is off, so the pipeline never puts a token back:

  tcod_turns  curriculum.tcod (Wang et al. 2026, TCOD): tokens outside the turns the
              step trains; at RL step s (1-based), with c = curriculum.steps_per_stage,
                front_to_back   turns 1..W(s),  W(s) = min(1 + ⌊(s−1)/c⌋, T)
                back_to_front   turns k(s)+1..T, k(s) = max(0, T − 1 − ⌊(s−1)/c⌋)
              (the rollout itself is unchanged: TCOD's replayed prefix is the
              policy's own earlier turns here)
  void_turns  filters.void_turns (SimpleTIR): void completions and every row of the
              subtree that continues from one

The only other edit is after the rows of the update are gathered: update/row_filter.py's
padding rows (copies of a kept group) get an all-false mask, the train step's padding
convention. The train step and the reward KL read the mask and never write it.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from mtrl.credit.curriculum import back_to_front_turn_mask, front_to_back_turn_mask
from mtrl.rollout.step_rollout import StepRollout
from mtrl.training.grow.curriculum import CurriculumConfig


@dataclasses.dataclass(frozen=True)
class MaskSettings:
    """The config the filters read: the curriculum section (TCOD's schedule),
    filters.void_turns and rollout.num_turns."""

    curriculum: CurriculumConfig
    void_turns: bool
    num_turns: int


@dataclasses.dataclass(frozen=True)
class MaskInputs:
    """What the filters read besides the mask: the settings, the step's rollout (its
    tree's infos; its batch's rows' turn, node, sample and each token's turn), and the
    1-based RL step."""

    settings: MaskSettings
    rollout: StepRollout
    step: int


VOID_NEEDS = frozenset({"void"})  # step info the void-turn filter reads on every step


def void_keep_mask(rollout: StepRollout) -> np.ndarray:
    """[N, C] bool: rows that stay in the loss under the void-turn filter."""
    tree, batch = rollout.tree, rollout.batch
    joint = tree.joint_actions
    void, dead = set(), set()  # (turn, node, agent, g); (turn, node) below a void completion
    for _, record, _, node, j, info in tree.joint_steps():
        if "void" not in info:
            raise ValueError("filters.void_turns: the environment's step info lacks "
                             "'void' (docs/methods.md)")
        flags = tuple(bool(v) for v in info["void"])
        for a, is_void in enumerate(flags):
            if is_void:
                void.add((record.turn, node, a, int(tree.joint_index[j, a])))
        if any(flags) or (record.turn, node) in dead:
            dead.add((record.turn + 1, node * joint + j))
    turn, node, sample = (np.asarray(x) for x in (batch.row_turn, batch.row_node,
                                                  batch.row_sample))
    keep = np.ones((batch.num_agents, batch.num_rows), bool)
    for c in np.flatnonzero(turn > 0):
        t, n, g = int(turn[c]), int(node[c]), int(sample[c])
        for a in range(batch.num_agents):
            keep[a, c] = (t, n) not in dead and (t, n, a, g) not in void
    return keep


def tcod_turn_mask(curriculum: CurriculumConfig, turn_index, step: int,
                   num_turns: int):
    """bool, shape of `turn_index` (1-based turn of each token, 0 = not sampled): the
    tokens TCOD trains at RL step `step` (>= 1; module docstring); None when tcod is
    off."""
    if not curriculum.tcod:
        return None
    if step < 1:
        raise ValueError(f"step must be >= 1 (RL steps are 1-based), got {step}")
    mask_fn = (front_to_back_turn_mask if curriculum.tcod == "front_to_back"
               else back_to_front_turn_mask)
    return mask_fn(jnp.asarray(turn_index), step - 1, curriculum.steps_per_stage, num_turns)


def tcod_turns(mask: jax.Array, inputs: MaskInputs) -> jax.Array:
    """TCOD (curriculum.tcod): a token stays only when its turn is one the schedule trains
    at this step (tcod_turn_mask); tcod off: unchanged."""
    settings = inputs.settings
    if not settings.curriculum.tcod:
        return mask
    return mask & tcod_turn_mask(settings.curriculum, inputs.rollout.batch.turn_index,
                                 inputs.step, settings.num_turns)


def void_turns(mask: jax.Array, inputs: MaskInputs) -> jax.Array:
    """SimpleTIR's void-turn filter (filters.void_turns): a row leaves the loss when its
    own completion is void or a completion on the way from the root to its node was
    (void_keep_mask); off: unchanged."""
    if not inputs.settings.void_turns:
        return mask
    keep = jnp.asarray(void_keep_mask(inputs.rollout))
    return mask & keep[:, :, None]


LOSS_MASK_FILTERS = (tcod_turns, void_turns)  # in order; each names its rule


def filter_loss_mask(settings: MaskSettings, rollout: StepRollout, step: int,
                     filters=LOSS_MASK_FILTERS) -> StepRollout:
    """The rollout with its loss mask through `filters` in order (the rollout itself
    when no filter changed the mask)."""
    inputs = MaskInputs(settings, rollout, step)
    mask = rollout.batch.loss_mask
    for rule in filters:
        mask = rule(mask, inputs)
    return rollout if mask is rollout.batch.loss_mask else rollout.with_loss_mask(mask)
