"""Preallocated key/value cache shared by the model and the sampler.

Layout (one array for all layers so the whole cache is a single pytree leaf pair):

  k, v   [num_layers, B, S, num_kv_heads, head_dim]   keys / values by slot
  valid  [B, S] bool                                  slot holds a real token
  index  [] int32                                     next slot to write (all rows)

Rows may hold different numbers of real tokens: padding inside a chunk is written
to its slot but marked invalid, so no row is ever left-padded and the write index
stays shared (one `dynamic_update_slice` per step, static shapes). A query written
at slot s attends to key slot s' iff valid[s'] and s' <= s. Rotary positions are
passed separately per token (the count of real tokens before it in its row), so a
slot number is not a position.

Multi-turn histories are append-only: a child turn writes its feedback tokens at
`index` and continues, never re-encoding the parent's history. `repeat` gives the G
samples of a prompt their own copy of its single prefill (prefix fan-out).
"""

from __future__ import annotations

import flax.struct
import jax
import jax.numpy as jnp


@flax.struct.dataclass
class KVCache:
    k: jax.Array  # [layers, B, S, kv_heads, head_dim]
    v: jax.Array  # [layers, B, S, kv_heads, head_dim]
    valid: jax.Array  # [B, S] bool
    index: jax.Array  # [] int32

    @classmethod
    def init(cls, *, num_layers: int, batch: int, max_len: int, num_kv_heads: int,
             head_dim: int, dtype=jnp.float32) -> "KVCache":
        shape = (num_layers, batch, max_len, num_kv_heads, head_dim)
        return cls(
            k=jnp.zeros(shape, dtype),
            v=jnp.zeros(shape, dtype),
            valid=jnp.zeros((batch, max_len), bool),
            index=jnp.zeros((), jnp.int32),
        )

    @property
    def batch(self) -> int:
        return self.valid.shape[0]

    @property
    def max_len(self) -> int:
        return self.valid.shape[1]

    def num_tokens(self) -> jax.Array:
        """[B] int32: real tokens held per row (the next token's rotary position)."""
        return self.valid.sum(axis=-1).astype(jnp.int32)

    def repeat(self, g: int) -> "KVCache":
        """Each row repeated g times consecutively: row b -> rows b*g .. b*g+g-1."""
        return KVCache(
            k=jnp.repeat(self.k, g, axis=1),
            v=jnp.repeat(self.v, g, axis=1),
            valid=jnp.repeat(self.valid, g, axis=0),
            index=self.index,
        )

    def take(self, rows: jax.Array) -> "KVCache":
        """Gather rows (e.g. the parents of the next turn's nodes)."""
        return KVCache(
            k=jnp.take(self.k, rows, axis=1),
            v=jnp.take(self.v, rows, axis=1),
            valid=jnp.take(self.valid, rows, axis=0),
            index=self.index,
        )
