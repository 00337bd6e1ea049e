"""The rollout batch: one frozen pytree that crosses from the host to the device.

Every completion of every agent at every turn is one row: the tokens the policy saw
(its branch history) followed by the tokens it sampled. Rows are turn-major, then
node, then sample, and every agent has the same rows (each node has G samples per
agent), so per-agent arrays stack on a leading agent axis. Row and length counts
are rounded up to powers of two so the train step compiles for a handful of shapes.
"""

from __future__ import annotations

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from mtrl.rollout.tree import TreeRollout


@flax.struct.dataclass
class RolloutBatch:
    tokens: jax.Array  # [N, C, L] int32 history + completion, right-padded with 0
    token_mask: jax.Array  # [N, C, L] bool real tokens
    loss_mask: jax.Array  # [N, C, L] bool sampled tokens of rows not truncated
    old_logprobs: jax.Array  # [N, C, L] f32 sampler log π(tokens[i] | tokens[:i]); 0 elsewhere
    turn_index: jax.Array  # [N, C, L] int32 turn (1-based) of sampled tokens; 0 elsewhere
    row_turn: jax.Array  # [C] int32 turn of the row; 0 for padding rows
    row_node: jax.Array  # [C] int32 node's flat index in [P] + [J]*(turn-1)
    row_sample: jax.Array  # [C] int32 g of the row within its node
    truncated: jax.Array  # [N, C] bool row cut by the context budget
    rewards: tuple  # per turn t: [P] + [J]*t f32 immediate rewards
    exists: tuple  # per turn: bool, entry was generated
    expanded: tuple  # per turn: bool, entry has children at t+1
    joint_index: jax.Array  # [J, N] int32 completion of agent a in joint action j
    components: dict  # name -> per-turn tuple of dense reward components
    num_generations: int = flax.struct.field(pytree_node=False)
    joint_mode: str = flax.struct.field(pytree_node=False)

    @property
    def num_agents(self) -> int:
        return self.tokens.shape[0]

    @property
    def num_rows(self) -> int:
        return self.tokens.shape[1]


def round_up_pow2(n: int, minimum: int = 8) -> int:
    size = minimum
    while size < n:
        size *= 2
    return size


def make_batch(tree: TreeRollout, min_rows: int = 8, min_len: int = 32,
               length: int | None = None) -> RolloutBatch:
    """Lays out every completion of `tree` as padded rows (see module docstring).

    length: pad every row to exactly this many tokens (e.g. the context budget) so
    the train step compiles once; default: the next power of two >= the longest row.
    """
    n, g = tree.config.num_agents, tree.config.num_generations
    rows = []  # (turn record, node m, sample g)
    for record in tree.turns:
        rows.extend((record, r // g, r) for r in range(len(record.node_index) * g))
    lengths = [len(rec.contexts[a][m]) + len(rec.completions[a][r])
               for rec, m, r in rows for a in range(n)]
    c_pad = round_up_pow2(len(rows), min_rows)
    longest = max(lengths, default=1)
    if length is not None and length < longest:
        raise ValueError(f"make_batch length={length} is shorter than the longest row ({longest})")
    l_pad = length if length is not None else round_up_pow2(longest, min_len)

    tokens = np.zeros((n, c_pad, l_pad), np.int32)
    token_mask = np.zeros((n, c_pad, l_pad), bool)
    loss_mask = np.zeros((n, c_pad, l_pad), bool)
    old_logprobs = np.zeros((n, c_pad, l_pad), np.float32)
    turn_index = np.zeros((n, c_pad, l_pad), np.int32)
    truncated = np.zeros((n, c_pad), bool)
    row_turn = np.zeros(c_pad, np.int32)
    row_node = np.zeros(c_pad, np.int32)
    row_sample = np.zeros(c_pad, np.int32)
    for c, (rec, m, r) in enumerate(rows):
        row_turn[c], row_node[c], row_sample[c] = rec.turn, rec.node_index[m], r % g
        for a in range(n):
            ctx, comp = rec.contexts[a][m], rec.completions[a][r]
            k, e = len(ctx), len(ctx) + len(comp)
            tokens[a, c, :k], tokens[a, c, k:e] = ctx, comp
            token_mask[a, c, :e] = True
            truncated[a, c] = rec.truncated[a, r]
            loss_mask[a, c, k:e] = not rec.truncated[a, r]
            old_logprobs[a, c, k:e] = rec.logprobs[a][r]
            turn_index[a, c, k:e] = rec.turn

    as_tuple = lambda arrays: tuple(jnp.asarray(x) for x in arrays)
    return RolloutBatch(
        tokens=jnp.asarray(tokens), token_mask=jnp.asarray(token_mask),
        loss_mask=jnp.asarray(loss_mask), old_logprobs=jnp.asarray(old_logprobs),
        turn_index=jnp.asarray(turn_index), row_turn=jnp.asarray(row_turn),
        row_node=jnp.asarray(row_node), row_sample=jnp.asarray(row_sample),
        truncated=jnp.asarray(truncated),
        rewards=as_tuple(tree.dense_rewards()), exists=as_tuple(tree.dense_exists()),
        expanded=as_tuple(tree.dense_expanded()),
        joint_index=jnp.asarray(tree.joint_index),
        components={k: as_tuple(v) for k, v in tree.dense_components().items()},
        num_generations=g, joint_mode=tree.config.joint_mode)
