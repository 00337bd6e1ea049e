"""The rows one train step consumes: every agent's tokens, masks, old log-probabilities
and advantages as [N, B, L] arrays, built from a RolloutBatch and indexed by row."""

from __future__ import annotations

from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from mtrl.rollout.batch import RolloutBatch


@flax.struct.dataclass
class PolicyMinibatch:
    """Rows of every agent that one train step consumes (N agents, B rows, L positions)."""

    tokens: jax.Array  # [N, B, L] int32 history + completion, right-padded
    token_mask: jax.Array  # [N, B, L] bool real tokens
    loss_mask: jax.Array  # [N, B, L] bool tokens that are trained (sampled, not truncated)
    old_logprobs: jax.Array  # [N, B, L] f32 sampler log π_old(tokens[i] | tokens[:i])
    advantages: jax.Array  # [N, B, L] f32 per-token advantage A_t (0 off the loss mask)
    turn_index: jax.Array  # [N, B, L] int32 1-based turn of sampled tokens, 0 elsewhere

    def validate(self, num_agents: int | None = None) -> tuple[int, int, int]:
        """Checks ranks, shapes and dtypes; returns (N, B, L)."""
        fields = dict(tokens=self.tokens, token_mask=self.token_mask, loss_mask=self.loss_mask,
                      old_logprobs=self.old_logprobs, advantages=self.advantages,
                      turn_index=self.turn_index)
        shape = jnp.shape(self.tokens)
        if len(shape) != 3:
            raise ValueError(f"PolicyMinibatch.tokens must be [N, B, L], got shape {shape}")
        for name, x in fields.items():
            if jnp.shape(x) != shape:
                raise ValueError(f"PolicyMinibatch.{name} has shape {jnp.shape(x)}, "
                                 f"tokens has {shape}; all fields must be [N, B, L]")
        kinds = dict(tokens=jnp.integer, turn_index=jnp.integer, token_mask=jnp.bool_,
                     loss_mask=jnp.bool_, old_logprobs=jnp.floating, advantages=jnp.floating)
        for name, kind in kinds.items():
            if not jnp.issubdtype(fields[name].dtype, kind):
                raise ValueError(f"PolicyMinibatch.{name} must be {kind.__name__}, "
                                 f"got {fields[name].dtype}")
        if num_agents is not None and shape[0] != num_agents:
            raise ValueError(f"PolicyMinibatch has {shape[0]} agents, the step expects "
                             f"{num_agents}")
        return shape


def policy_minibatch(batch: RolloutBatch, advantages: jax.Array,
                     rows: Any = None) -> PolicyMinibatch:
    """The train-step fields of `batch` with `advantages` ([N, C, L], e.g.
    token_advantages(credit, rollout, ...)), restricted to `rows` (indices into C) when
    given."""
    if jnp.shape(advantages) != jnp.shape(batch.tokens):
        raise ValueError(f"advantages shape {jnp.shape(advantages)} != batch tokens "
                         f"{jnp.shape(batch.tokens)} ([N, C, L])")
    minibatch = PolicyMinibatch(
        tokens=batch.tokens, token_mask=batch.token_mask, loss_mask=batch.loss_mask,
        old_logprobs=batch.old_logprobs, advantages=jnp.asarray(advantages, jnp.float32),
        turn_index=batch.turn_index)
    return minibatch if rows is None else take_rows(minibatch, rows)


def take_rows(minibatch: PolicyMinibatch, rows: Any) -> PolicyMinibatch:
    """The given rows (indices along the B axis) of every field."""
    rows = jnp.asarray(rows, jnp.int32)
    if rows.ndim != 1:
        raise ValueError(f"rows must be a 1-d index array, got shape {rows.shape}")
    return jax.tree.map(lambda x: jnp.take(x, rows, axis=1), minibatch)


def pad_minibatch_rows(minibatch: PolicyMinibatch, rows: int) -> PolicyMinibatch:
    """The minibatch with empty rows appended up to `rows` (no token, no loss: every
    aggregation leaves a row without valid tokens out)."""
    extra = rows - jnp.shape(minibatch.tokens)[1]
    if extra < 0:
        raise ValueError(f"cannot pad {jnp.shape(minibatch.tokens)[1]} rows to {rows}")
    return jax.tree.map(lambda x: jnp.pad(x, ((0, 0), (0, extra), (0, 0))), minibatch)


def host_rows(minibatch: PolicyMinibatch) -> PolicyMinibatch:
    """The minibatch as host numpy (the packer's input); a batch spread over several
    processes is gathered from all of them first."""
    if all(getattr(x, "is_fully_addressable", True) for x in jax.tree.leaves(minibatch)):
        return jax.tree.map(np.asarray, minibatch)
    from jax.experimental import multihost_utils
    return jax.tree.map(np.asarray, multihost_utils.process_allgather(minibatch, tiled=True))
