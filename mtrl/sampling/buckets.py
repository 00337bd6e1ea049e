"""Static-shape bucketing: round batch sizes, chunk lengths and cache lengths up to a
few fixed sizes so that repeated sampler calls reuse compiled programs.

Every jitted sampler function is compiled once per distinct input shape. Raw request
shapes vary from call to call (number of live branches, prompt lengths), so the host
pads them up to a bucket:

  batch     -> next power of two >= max(n, min_batch); padding rows are all-invalid
               dummies with a zero token budget.
  chunk L   -> next power of two >= max(n, min_length); padding tokens are written
               to their cache slots but marked invalid (`token_mask` False).
  cache S   -> next multiple of `cache_multiple`.

Powers of two bound the waste at < 2x and the number of programs at log2 of the range.

No compile after warm-up: once `Sampler.freeze()` is called (the trainer does after its
first steps), a call whose bucketed shape was not compiled runs in the smallest
compiled shape that holds it (more rows, chunk tokens, cache slots: `ShapeCover`), its
rows, tokens and slots padding as above; only a call larger than every shape met
before compiles. The first prefill batch is the bucket of the prompts asked for, not of
the distinct ones, so a step whose tasks share a prompt meets no new batch.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from mtrl.models.kv_cache import KVCache


def next_power_of_two(n: int, minimum: int = 1) -> int:
    """Smallest power of two >= max(n, minimum)."""
    if n < 0 or minimum < 1:
        raise ValueError(f"need n >= 0 and minimum >= 1, got n={n}, minimum={minimum}")
    target = max(n, minimum)
    return 1 << (target - 1).bit_length()


def round_up(n: int, multiple: int) -> int:
    """Smallest multiple of `multiple` that is >= n (and >= multiple)."""
    if n < 0 or multiple < 1:
        raise ValueError(f"need n >= 0 and multiple >= 1, got n={n}, multiple={multiple}")
    return max(multiple, -(-n // multiple) * multiple)


@dataclasses.dataclass(frozen=True)
class BucketPolicy:
    """How request shapes are rounded up (see the module docstring)."""

    min_batch: int = 1
    min_length: int = 16
    cache_multiple: int = 64

    def __post_init__(self):
        for name in ("min_batch", "min_length", "cache_multiple"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    def batch(self, n: int) -> int:
        return next_power_of_two(n, self.min_batch)

    def length(self, n: int) -> int:
        return next_power_of_two(n, self.min_length)

    def cache_len(self, n: int) -> int:
        return round_up(n, self.cache_multiple)


class ShapeCover:
    """The static shapes each program was compiled for, and the one a call runs in.

    A shape is a tuple of sizes (rows, tokens, slots, ...), every one of which a call
    may pad up. `shape(program, wanted, fits)` is `wanted` itself (remembered) until
    `frozen`; then the compiled shape of `program` with every size >= wanted's and
    `fits(shape)` true that has the fewest elements (the product of its sizes), or
    `wanted` when none does (a compile).

    `state()` is the shapes met as JSON data and `restore(state)` takes them back, so
    another process (a resumed run) pads each call as this one would; its programs
    compile on first use. A program is named by `program_key` (a dataclass by its
    fields), the same text in every process."""

    def __init__(self):
        self.frozen = False
        self._compiled: dict[str, set[tuple[int, ...]]] = {}

    def shape(self, program, wanted: tuple[int, ...], fits=lambda shape: True
              ) -> tuple[int, ...]:
        compiled = self._compiled.setdefault(program_key(program), set())
        if self.frozen and wanted not in compiled:
            covering = [c for c in compiled
                        if all(a >= b for a, b in zip(c, wanted)) and fits(c)]
            if covering:
                return min(covering, key=lambda c: (np.prod(c, dtype=np.int64), c))
        compiled.add(wanted)
        return wanted

    def state(self) -> dict[str, list[list[int]]]:
        """{program key: its shapes, sorted}: JSON data (`frozen` is the caller's)."""
        return {key: [list(shape) for shape in sorted(shapes)]
                for key, shapes in sorted(self._compiled.items())}

    def restore(self, state: dict[str, list[list[int]]]) -> None:
        """The shapes of `state()` in place of this cover's (`frozen` unchanged)."""
        self._compiled = {str(key): {tuple(int(n) for n in shape) for shape in shapes}
                          for key, shapes in state.items()}


def program_key(program) -> str:
    """A program's name as JSON text: a string as itself, a tuple as a list, a
    dataclass (e.g. the SamplingConfig a decode program is compiled for) as
    {class name: its fields}."""
    if isinstance(program, str):
        return program
    return json.dumps(program, sort_keys=True, default=_fields)


def _fields(value) -> dict:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {type(value).__name__: dataclasses.asdict(value)}
    raise TypeError(f"a program key holds {type(value).__name__}, which has no JSON text")


def pad_cache(cache: KVCache, batch: int, max_len: int) -> KVCache:
    """The cache with dummy rows (every slot invalid) up to `batch` and empty slots up to
    `max_len`: attention over its real rows is unchanged (grow_cache)."""
    extra = batch - cache.batch
    if extra < 0:
        raise ValueError(f"cannot shrink a cache of {cache.batch} rows to {batch}")
    if extra:
        kv_pad = [(0, 0), (0, extra), (0, 0), (0, 0), (0, 0)]  # rows: axis 1
        cache = KVCache(k=jnp.pad(cache.k, kv_pad), v=jnp.pad(cache.v, kv_pad),
                        valid=jnp.pad(cache.valid, [(0, extra), (0, 0)]), index=cache.index)
    return grow_cache(cache, max_len)


def pad_token_rows(rows: Sequence[Sequence[int]], batch: int, length: int,
                   pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad ragged token rows into host arrays.

    Returns tokens [batch, length] int32 (pad_id in padding) and token_mask
    [batch, length] bool; rows beyond len(rows) are all padding.
    """
    if len(rows) > batch:
        raise ValueError(f"{len(rows)} rows do not fit a batch of {batch}")
    tokens = np.full((batch, length), pad_id, np.int32)
    mask = np.zeros((batch, length), bool)
    for b, row in enumerate(rows):
        if len(row) > length:
            raise ValueError(f"row {b} has {len(row)} tokens, more than the length {length}")
        tokens[b, : len(row)] = row
        mask[b, : len(row)] = True
    return tokens, mask


def pad_leading(x: np.ndarray, batch: int, fill=0) -> np.ndarray:
    """Pad axis 0 of a host array up to `batch` with `fill`."""
    x = np.asarray(x)
    if x.shape[0] > batch:
        raise ValueError(f"leading size {x.shape[0]} exceeds the batch {batch}")
    pad = np.full((batch - x.shape[0],) + x.shape[1:], fill, x.dtype)
    return np.concatenate([x, pad], axis=0)


def grow_cache(cache: KVCache, max_len: int) -> KVCache:
    """The same cache with room for `max_len` slots (new slots empty and invalid).

    Slot numbers, the write index and every row's valid tokens are unchanged, so
    attention over the grown cache equals attention over the original one.
    """
    if max_len < cache.max_len:
        raise ValueError(f"cannot shrink a cache of {cache.max_len} slots to {max_len}")
    extra = max_len - cache.max_len
    if extra == 0:
        return cache
    kv_pad = [(0, 0), (0, 0), (0, 0), (0, extra), (0, 0)]  # slots: axis 3
    return KVCache(
        k=jnp.pad(cache.k, kv_pad),
        v=jnp.pad(cache.v, kv_pad),
        valid=jnp.pad(cache.valid, [(0, 0), (0, extra)]),
        index=cache.index,
    )


def cache_rows(cache: KVCache, rows: Sequence[int] | np.ndarray, batch: int) -> KVCache:
    """Gather `rows` of a cache into a new batch of `batch` rows.

    Rows past len(rows) are dummies: a copy of row rows[0] with every slot invalid, so
    they attend to nothing real and carry no history.
    """
    rows = np.asarray(rows, np.int32)
    if rows.ndim != 1 or rows.size == 0:
        raise ValueError(f"rows must be a non-empty 1-D index list, got shape {rows.shape}")
    if rows.min() < 0 or rows.max() >= cache.batch:
        raise ValueError(f"rows must lie in [0, {cache.batch}), got {rows.min()}..{rows.max()}")
    taken = cache.take(jnp.asarray(pad_leading(rows, batch, rows[0])))
    real = jnp.arange(batch) < rows.size
    return taken.replace(valid=taken.valid & real[:, None])

