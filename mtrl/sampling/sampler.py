"""`Sampler`: the host-side front end of the jitted prefill / decode core.

One `generate` call:

  1. deduplicates the prompts (one prefill per distinct prompt: prefix sharing),
  2. pads them into a bucketed chunk [B1, L] and prefills a fresh cache of L slots,
  3. fans the cache and next-token logits out to the G samples of each prompt
     (row p*G + g is sample g of prompt p), bucketed to B2 rows, and grows the cache to
     S = cache bucket of L + T slots,
  4. decodes up to T = config.max_new_tokens tokens per row in one `lax.while_loop`.

Caches are kept only as long as the next program needs because attention reads every
slot it is given: prefilling 64-token prompts of a batch of 64 into 64 slots instead of
the 192 that decoding will need measured 2.5x faster (qwen2-3m, 2-core CPU).

`extend_and_generate` is the multi-turn step: gather the parent rows of a previous
`Generation`'s cache, append each child's new tokens (feedback) without re-encoding the
history, fan out and decode. Shapes are bucketed (`BucketPolicy`), so calls within a
bucket reuse compiled programs; `num_compiles` counts traces of the three programs.
After `freeze()` a call runs in the smallest compiled shape that holds it (buckets.py,
ShapeCover): a run compiles in its first steps only, unless a later call is larger than
any before.

Bucket padding rows are dummies (no valid tokens, zero budget); they are sliced off the
returned `SampleOutput`, but stay in `Generation.cache` (rows >= num_rows).
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from mtrl.models.kv_cache import KVCache
from mtrl.models.transformer import init_cache
from mtrl.parallel.shardings import committed
from mtrl.sampling.buckets import (BucketPolicy, ShapeCover, grow_cache, next_power_of_two,
                                   pad_cache, pad_leading, pad_token_rows)
from mtrl.sampling.config import SamplingConfig
from mtrl.sampling.decode import decode
from mtrl.sampling.output import SampleOutput
from mtrl.sampling.prefill import prefill
from mtrl.sampling.tracing import TraceCounter


@dataclasses.dataclass(frozen=True)
class Generation:
    """Result of a sampler call.

    output: real rows only, [N, T]; row i = sample i % G of request i // G.
    cache:  [layers, B2, S, ...] with B2 >= N the bucketed batch; row i < N holds the
            request's history + its prompt + output row i (stop token included), ready
            to be extended. Rows >= N are bucket padding.
    """

    output: SampleOutput
    cache: KVCache

    @property
    def num_rows(self) -> int:
        return self.output.batch


# The decode program grows the cache by T slots in the same copy as the fan-out gather.


def _start_program(graphdef, state, tokens, token_mask, *, model_config):
    cache = init_cache(model_config, tokens.shape[0], tokens.shape[1])
    return prefill(graphdef, state, cache, tokens, token_mask)


def _gather_rows(cache: KVCache, rows: jax.Array, row_is_real: jax.Array, max_len: int
                 ) -> KVCache:
    """cache rows `rows`, dummy rows emptied, grown to max_len slots."""
    cache = cache.take(rows)
    cache = cache.replace(valid=cache.valid & row_is_real[:, None])
    return grow_cache(cache, max_len)


def _extend_program(graphdef, state, cache, rows, row_is_real, tokens, token_mask, *, max_len):
    cache = _gather_rows(cache, rows, row_is_real, max_len)
    return prefill(graphdef, state, cache, tokens, token_mask)


def _fanout_decode_program(graphdef, state, cache, last_logits, rows, row_is_real, key,
                           max_new_tokens, stop_tokens, *, config, max_len):
    cache = _gather_rows(cache, rows, row_is_real, max_len)
    return decode(graphdef, state, cache, jnp.take(last_logits, rows, axis=0), key, config,
                  max_new_tokens, stop_tokens)


class Sampler:
    """Bucketed, compile-counted sampling from one NNX transformer.

    The parameters are a traced argument of every program, so `set_state` (e.g. after a
    training step) swaps weights without recompiling.
    """

    def __init__(self, model: nnx.Module, *, buckets: BucketPolicy = BucketPolicy(),
                 shardings=None):
        self.graphdef, self.state = nnx.split(model)
        # A mtrl.parallel.ShardingPlan: parameters laid out by its rules (pass states
        # so laid out to set_state), prompt rows split over data/fsdp; None: one device.
        self.shardings = shardings
        self.model_config = model.config
        self.state = (committed(self._sampling_copy(self.state)) if shardings is None
                      else shardings.shard_tree(self._sampling_copy(self.state)))
        self.buckets = buckets
        self.traces = TraceCounter()
        self.shapes = ShapeCover()  # the shapes compiled; frozen: calls pad into them
        # Host-side work counters (real rows / tokens, bucket padding excluded), e.g. to
        # report how much prefill prefix sharing saved.
        self.stats: collections.Counter[str] = collections.Counter()
        self._start = jax.jit(self.traces.wrap("prefill", _start_program),
                              static_argnums=0, static_argnames=("model_config",))
        self._extend = jax.jit(self.traces.wrap("extend", _extend_program),
                               static_argnums=0, static_argnames=("max_len",))
        self._decode = jax.jit(self.traces.wrap("decode", _fanout_decode_program),
                               static_argnums=0, static_argnames=("config", "max_len"))

    @property
    def num_compiles(self) -> int:
        """Traces (= compilations) of the sampler's jitted programs so far."""
        return self.traces.total

    def freeze(self) -> None:
        """From now on a call runs in the smallest shape compiled so far that holds it
        (padded: the same samples), and compiles only when none does."""
        self.shapes.frozen = True

    def set_state(self, state: nnx.State) -> None:
        """Use new parameters (same structure and shapes: no recompilation)."""
        # Committed on one device as a restored state is: the same compiled programs.
        state = self._sampling_copy(state)
        self.state = state if self.shardings is not None else committed(state)

    def _sampling_copy(self, state: nnx.State) -> nnx.State:
        """The parameters as the sampler keeps them: with a bfloat16 compute dtype, float
        weights in bfloat16 (every use casts them to the compute dtype first, so the
        values are the trainer's; decoding reads half the bytes per step)."""
        dtype = self.model_config.compute_dtype
        if dtype != jnp.bfloat16:
            return state
        return jax.tree.map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating)
                            else x, state)

    # -- public entry points ---------------------------------------------------------

    def generate(self, prompts: Sequence[Sequence[int]], key: jax.Array, config: SamplingConfig,
                 *, num_samples: int = 1, max_new_tokens: Sequence[int] | None = None,
                 stop_tokens: Sequence[Sequence[int]] | None = None,
                 share_prefix: bool = True) -> Generation:
        """Sample `num_samples` (G) completions of every prompt.

        prompts: P non-empty token lists. max_new_tokens / stop_tokens: optional per-prompt
        budgets (<= config.max_new_tokens) and extra stop ids, shared by its G samples.
        share_prefix=False prefills every sample's copy of its prompt separately (the
        baseline that prefix sharing is measured against; same outputs).
        """
        prompts = [list(map(int, p)) for p in prompts]
        self._check_requests(prompts, num_samples, "prompts")
        limits = self._row_limits(len(prompts), num_samples, config, max_new_tokens, stop_tokens)
        if share_prefix:
            distinct: dict[tuple[int, ...], int] = {}
            source = [distinct.setdefault(tuple(p), len(distinct)) for p in prompts]
            chunk_rows = [list(p) for p in distinct]
            fanout = np.repeat(np.asarray(source, np.int32), num_samples)
        else:
            chunk_rows = [p for p in prompts for _ in range(num_samples)]
            fanout = np.arange(len(chunk_rows), dtype=np.int32)
        # The batch of the prompts asked for (>= the distinct ones): the same every step.
        batch, length = self.shapes.shape("prefill", (
            self.buckets.batch(len(prompts) * (1 if share_prefix else num_samples)),
            self.buckets.length(max(len(p) for p in chunk_rows))))
        tokens, mask = self._place(*pad_token_rows(chunk_rows, batch, length, config.pad_id))
        cache, last_logits = self._start(self.graphdef, self.state, tokens, mask,
                                         model_config=self.model_config)
        self._count_prefill(chunk_rows)
        return self._fan_out_and_decode(cache, length, last_logits, fanout, key, config,
                                        limits)

    def extend_and_generate(self, cache: KVCache, rows: Sequence[int],
                            new_tokens: Sequence[Sequence[int]], key: jax.Array,
                            config: SamplingConfig, *, num_samples: int = 1,
                            max_new_tokens: Sequence[int] | None = None,
                            stop_tokens: Sequence[Sequence[int]] | None = None) -> Generation:
        """Continue from existing histories: child i extends cache row rows[i] with
        new_tokens[i] (e.g. environment feedback), then draws `num_samples` completions.

        The parent history is read from the cache, never re-encoded. The cache grows (to a
        bucketed length) when the new tokens and T more do not fit.
        """
        new_tokens = [list(map(int, t)) for t in new_tokens]
        self._check_requests(new_tokens, num_samples, "new_tokens")
        limits = self._row_limits(len(new_tokens), num_samples, config, max_new_tokens,
                                  stop_tokens)
        if len(rows) != len(new_tokens):
            raise ValueError(f"{len(rows)} parent rows but {len(new_tokens)} new-token lists")
        parents = np.asarray(rows, np.int32)
        if parents.min() < 0 or parents.max() >= cache.batch:
            raise ValueError(f"parent rows must lie in [0, {cache.batch})")
        length = self.buckets.length(max(len(t) for t in new_tokens))
        index = int(jax.device_get(cache.index))
        max_len = max(cache.max_len, self.buckets.cache_len(index + length))
        rows_in, slots_in, batch, length, max_len = self.shapes.shape(
            "extend", (cache.batch, cache.max_len, self.buckets.batch(len(new_tokens)), length,
                       max_len), fits=lambda s: index + s[3] <= s[4])
        cache = pad_cache(cache, rows_in, slots_in)
        tokens, mask = self._place(*pad_token_rows(new_tokens, batch, length, config.pad_id))
        child_cache, last_logits = self._extend(
            self.graphdef, self.state, cache, pad_leading(parents, batch, parents[0]),
            np.arange(batch) < len(parents), tokens, mask, max_len=max_len)
        self._count_prefill(new_tokens)
        fanout = np.repeat(np.arange(len(new_tokens), dtype=np.int32), num_samples)
        return self._fan_out_and_decode(child_cache, index + length, last_logits, fanout, key,
                                        config, limits)

    # -- internals ---------------------------------------------------------------------

    def _place(self, *rows: np.ndarray):
        """Row arrays split over the plan's data/fsdp axes (kept as given without one);
        the programs' caches and outputs follow by GSPMD propagation."""
        if self.shardings is None:
            return rows
        return tuple(self.shardings.shard_batch(x, row_axis=0) for x in rows)

    @staticmethod
    def _check_requests(requests: list[list[int]], num_samples: int, name: str) -> None:
        if not requests:
            raise ValueError(f"{name} must not be empty")
        if any(len(r) == 0 for r in requests):
            raise ValueError(f"every entry of {name} needs at least one token "
                             "(its last token's logits start the completion)")
        if num_samples < 1:
            raise ValueError(f"num_samples must be >= 1, got {num_samples}")

    def _count_prefill(self, rows: list[list[int]]) -> None:
        self.stats["prefill_rows"] += len(rows)
        self.stats["prefill_tokens"] += sum(len(r) for r in rows)

    @staticmethod
    def _row_limits(requests: int, num_samples: int, config: SamplingConfig,
                    max_new_tokens: Sequence[int] | None,
                    stop_tokens: Sequence[Sequence[int]] | None
                    ) -> tuple[np.ndarray, np.ndarray]:
        """Per output row: token budgets [N] and stop ids [N, K] (-1 padded; K a power of
        two >= 4 so that typical stop lists share one program)."""
        budgets = np.full(requests, config.max_new_tokens, np.int32)
        if max_new_tokens is not None:
            if len(max_new_tokens) != requests:
                raise ValueError(
                    f"max_new_tokens needs {requests} entries, got {len(max_new_tokens)}")
            budgets = np.asarray(max_new_tokens, np.int32)
            if budgets.min() < 0 or budgets.max() > config.max_new_tokens:
                raise ValueError(
                    f"per-row max_new_tokens must lie in [0, {config.max_new_tokens}]")
        stops = [[] for _ in range(requests)] if stop_tokens is None else list(stop_tokens)
        if len(stops) != requests:
            raise ValueError(f"stop_tokens needs {requests} entries, got {len(stops)}")
        if any(int(t) < 0 for ids in stops for t in ids):
            raise ValueError("stop token ids must be >= 0")
        stop_table = np.full((requests, next_power_of_two(max(map(len, stops)), 4)),
                             -1, np.int32)
        for i, ids in enumerate(stops):
            stop_table[i, : len(ids)] = ids
        return (np.repeat(budgets, num_samples), np.repeat(stop_table, num_samples, axis=0))

    def _fan_out_and_decode(self, cache, index, last_logits, fanout, key, config, limits
                            ) -> Generation:
        """Decode from a prefilled cache whose write index is `index` (known on the host,
        so no device sync is needed here)."""
        budgets, stop_table = limits
        rows = len(fanout)
        max_len = max(cache.max_len, self.buckets.cache_len(index + config.max_new_tokens))
        rows_in, slots_in, batch, stops, max_len = self.shapes.shape(
            ("decode", config), (cache.batch, cache.max_len, self.buckets.batch(rows),
                                 stop_table.shape[1], max_len),
            fits=lambda s: index + config.max_new_tokens <= s[4])
        if rows_in > cache.batch:  # dummy rows: no valid slot, uniform logits, no budget
            last_logits = jnp.pad(last_logits, [(0, rows_in - cache.batch), (0, 0)])
        cache = pad_cache(cache, rows_in, slots_in)
        stop_table = np.pad(stop_table, [(0, 0), (0, stops - stop_table.shape[1])],
                            constant_values=-1)
        output, cache = self._decode(
            self.graphdef, self.state, cache, last_logits,
            pad_leading(fanout, batch, fanout[0]), np.arange(batch) < rows, key,
            pad_leading(budgets, batch, 0), pad_leading(stop_table, batch, -1),
            config=config, max_len=max_len)
        self.stats["decode_rows"] += rows
        return Generation(output=output.rows(slice(0, rows)), cache=cache)
