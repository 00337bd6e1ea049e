"""The update stage: a step's rows and advantages in, new parameters out.

    rows   = policy_minibatch(rollout.batch, advantages)     [N, C, L] (minibatch.py)
    rows   = every process's rows (gather_rows)              several processes only
    check_groups(rows, unit)      a loss's groups share a parent (row_groups.py)
    rows   = keep_informative_groups(rows, unit)             train.drop_zero_advantage
    rows   = rows padded to the tree's most rows             packed updates only
    state  = ppo_update(step_fn, state, rows, ...)           PPO epochs (ppo_epochs.py)

unit = the loss's group size (REFUEL's pairs: 2), so the filter and the shuffle move
whole groups. A non-finite update fails naming the step.

A packed update runs every step on one row count, that of a tree in which no episode
ends early (packed_row_count): how many turns the episodes took and how many groups
the filter kept then change the packed bins only, not the program's rows, and an empty
row costs the packed forward nothing (it is never packed). An unpacked update's cost
follows its rows, so it keeps the filter's power of two.

No compile after warm-up (packed updates on one device): `freeze(state)` (the
trainer's, after its first steps) compiles, without running it, the largest layout a
minibatch of the rows met can need, every row its own bin of the longest budget
(largest_layout; skipped when the memory guard refuses it: such a minibatch could not
run anyway), and lets every later minibatch run in the smallest layout compiled so far
that holds it (TrainStep's layout reuse with no growth limit). Every minibatch then
fits a compiled layout, so after the freeze the update compiles nothing, and the
warm-up steps' own layouts keep a typical step's padding near its packing's. A run no
longer than its warm-up never compiles the largest layout.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp

from mtrl.parallel.process_rollout import gather_rows, is_multiprocess
from mtrl.rollout import StepRollout
from mtrl.rollout.batch import round_up_pow2
from mtrl.rollout.tree import TreeRollout
from mtrl.training.update.buckets import bucket_count
from mtrl.training.update.memory import StepMemoryError
from mtrl.training.update.minibatch import PolicyMinibatch, pad_minibatch_rows, policy_minibatch
from mtrl.training.update.packing import PackedRows, budget_for
from mtrl.training.update.ppo_epochs import ppo_update
from mtrl.training.update.row_filter import informative_rows, keep_informative_groups
from mtrl.training.update.row_groups import check_groups
from mtrl.training.update.step_metrics import check_finite
from mtrl.training.policy.train_state import TrainState


@dataclasses.dataclass(frozen=True)
class Update:
    """What the update stage did: `metrics` of its minibatches ([]: no update ran),
    `rows` (None: every group was uninformative and dropped), `kept` real rows,
    `informative` rows (a non-zero advantage on a loss token, before any filter), the
    last minibatch's `packing` token counts ({}: no update ran) and the train step's
    `compiles` so far."""

    metrics: list
    rows: PolicyMinibatch | None
    kept: int
    informative: int = 0
    packing: dict = dataclasses.field(default_factory=dict)
    compiles: int = 0

    @property
    def skipped(self) -> str | None:
        """Why no update ran, or None."""
        if self.metrics:
            return None
        return ("update skipped: no informative group" if self.rows is None
                else "update skipped: no trainable token")


@dataclasses.dataclass(frozen=True)
class UpdateStage:
    """Everything the stage reads: the jitted train step, the `train` section's
    epochs, minibatches and zero-advantage filter, the loss's group size and the
    PPO shuffle's key of a step."""

    step_fn: Any  # train_step.make_train_step's TrainStep
    ppo_epochs: int
    minibatches: int
    drop_zero_advantage: bool
    group_size: int  # PolicyLoss.group_size of the configured loss
    key_of: Callable[[int], jax.Array]  # RL step -> its PPO key (RunKeys.ppo)
    # (agents, minibatch rows, row length) of the packed minibatches run so far
    row_shapes: set = dataclasses.field(default_factory=set, compare=False)

    def freeze(self, state: TrainState) -> None:
        """Compiles the largest layout of each row shape met, and from now on runs every
        packed minibatch in the smallest compiled layout that holds it (module
        docstring). `state` is only read (its shapes)."""
        self.step_fn.freeze_layouts()
        for shape in sorted(self.row_shapes):
            self._compile_largest(state, *shape)

    def update(self, rollout: StepRollout, advantages: jax.Array, state: TrainState,
               step: int) -> tuple[TrainState, Update]:
        """(new state, Update) of RL step `step` (module docstring)."""
        batch, unit = rollout.batch, self.group_size
        rows, kept = policy_minibatch(batch, advantages), batch.num_rows
        if is_multiprocess():  # every process updates on all processes' rows
            rows, kept = gather_rows(rows)
        check_groups(batch, unit)
        informative = int(informative_rows(rows).sum())
        min_rows = max(8, self.minibatches * unit)
        if self.step_fn.packing != "none":
            min_rows = packed_row_count(rollout.tree, min_rows) * jax.process_count()
        if self.drop_zero_advantage:
            rows, kept = keep_informative_groups(rows, unit, min_rows=min_rows)
        if rows is not None and rows.tokens.shape[1] < min_rows:
            rows = pad_minibatch_rows(rows, min_rows)
        metrics = []
        if rows is not None and self.step_fn.packing != "none":
            n, count, length = rows.tokens.shape
            self.row_shapes.add((n, count // self.minibatches, length))
        if rows is not None:
            state, metrics = ppo_update(self.step_fn, state, rows, epochs=self.ppo_epochs,
                                        minibatches=self.minibatches, key=self.key_of(step),
                                        group_size=unit)
        try:
            check_finite(metrics)
        except FloatingPointError as e:
            raise FloatingPointError(f"step {step}: {e}") from None
        # A skipped update packed nothing (the step function's last packing is an earlier
        # step's, which a resumed run would not have).
        packing = dict(self.step_fn.last_packing) if metrics else {}
        return state, Update(metrics, rows, kept, informative, packing=packing,
                             compiles=self.step_fn.num_compiles)

    def _compile_largest(self, state: TrainState, agents: int, rows: int, length: int
                         ) -> None:
        """Compiles (without running) the largest layout of minibatches of `rows` rows and
        records it as compiled (module docstring); one device only."""
        step_fn = self.step_fn
        layout = largest_layout(rows, length, step_fn.min_budget, step_fn.bin_buckets)
        # TrainStep's record of compiled layouts per (agents, row length): _layout reuses it.
        compiled = step_fn._packed_layouts.setdefault((agents, length), set())
        if step_fn.shardings is not None or layout in compiled:
            return
        try:
            if step_fn.memory_guard is not None:
                step_fn.memory_guard(*layout[1:])
        except StepMemoryError:
            return
        step_fn.lower(state, abstract_minibatch(agents, rows, length),
                      abstract_packed(agents, *layout, length)).compile()
        compiled.add(layout)


def largest_layout(rows: int, length: int, min_budget: int, bin_buckets
                   ) -> tuple[int, int, int]:
    """(rows, bins, budget) that holds any packing of `rows` rows of at most `length`
    tokens: one bin per row (a row never spans bins, so no packing needs more) of the
    budget of the longest row, the bin count on the ladder."""
    return rows, bucket_count(rows, bin_buckets), budget_for(length, min_budget)


def abstract_minibatch(agents: int, rows: int, length: int) -> PolicyMinibatch:
    """The PolicyMinibatch shapes and dtypes of [agents, rows, length] rows (no data)."""
    shape = (agents, rows, length)
    return PolicyMinibatch(
        tokens=jax.ShapeDtypeStruct(shape, jnp.int32),
        token_mask=jax.ShapeDtypeStruct(shape, jnp.bool_),
        loss_mask=jax.ShapeDtypeStruct(shape, jnp.bool_),
        old_logprobs=jax.ShapeDtypeStruct(shape, jnp.float32),
        advantages=jax.ShapeDtypeStruct(shape, jnp.float32),
        turn_index=jax.ShapeDtypeStruct(shape, jnp.int32))


def abstract_packed(agents: int, rows: int, bins: int, budget: int, length: int
                    ) -> PackedRows:
    """The PackedRows shapes and dtypes of that layout (for lowering, no data)."""
    def shaped(*shape, dtype=jnp.int32):
        return jax.ShapeDtypeStruct(shape, dtype)
    bins_shape, rows_shape = (agents, bins, budget), (agents, rows, length)
    return PackedRows(tokens=shaped(*bins_shape), positions=shaped(*bins_shape),
                      attend_end=shaped(*bins_shape), token_mask=shaped(*bins_shape, dtype=bool),
                      parent=shaped(*bins_shape), node_index=shaped(*rows_shape),
                      predicted=shaped(*rows_shape, dtype=bool))


def packed_row_count(tree: TreeRollout, minimum: int = 8) -> int:
    """Rows of the largest tree the rollout config can grow for `tree`'s tasks (no
    episode ending early: G · Σ_t P·J^(t−1) completions), rounded up to a power of two
    >= minimum: the one row count of a packed update (module docstring)."""
    config = tree.config
    nodes = sum(config.max_nodes_at_turn(tree.num_tasks, t)
                for t in range(1, config.num_turns + 1))
    return round_up_pow2(nodes * config.num_generations, minimum)
