"""Packing training rows into fixed-budget sequences: no padding to the context limit,
and each shared prefix computed once.

Rows of one agent ([B, L], right-padded) become P bins of S tokens ([P, S]). Every packed
token is a node of a forest laid out depth-first inside its bin; it carries

  position[p, s]    its depth (= its position in every row that contains it)
  attend_end[p, s]  the end of its subtree: query i attends key j iff j <= i < end[j]
  parent[p, s]      the in-bin index of the node before it in its rows (itself at depth 0)

and node_index[b, i] = p·S + s names the node holding token i of row b. The row
log-probability is then read off the packed logits z:

  logp[b, i] = z[parent(n), tokens[n]] − logsumexp z[parent(n)],   n = node_index[b, i]

which equals the row-wise forward's, because a node attends exactly to its ancestors
(= the tokens before it in each of its rows) at the same rotary positions.

Modes:
  rows  every row is its own chain (segment ids via attend_end, positions per segment);
        bins filled first-fit decreasing.
  tree  the rows in a bin form a trie: rows sorted lexicographically, and a row adds only
        the tokens after its longest common prefix with the previous one. Rows go into
        bins greedily in that order, so rows of one subtree (one task prompt, one turn-1
        history) share their bin and their prefix.
  none  the padded rows themselves (the reference layout).

Bins: S is the smallest budget in BUDGETS that holds the longest row and is at least
`min_budget`; the bin count is rounded up to the ladder `bin_buckets` (buckets.py:
"none", "pow2" or a ratio, default 1.25: 1, 2, 3, 4, 5, 6, 8, 10, 12, 15, ...), so a
train step compiles for a few (P, S) shapes only. Rows without a loss token (for that agent) are left out: they
contribute nothing to a loss or gradient.
"""

from __future__ import annotations

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from mtrl.config.fields import check_choice
from mtrl.training.update.buckets import DEFAULT_BIN_BUCKETS, bucket_count

PACKING_MODES = ("none", "rows", "tree")
# Steps of 1.5x and 2x alternately: a bin wastes at most a third of its tokens on rows
# that just miss a smaller budget.
BUDGETS = (64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
           12288, 16384)


@flax.struct.dataclass
class PackedRows:
    """The packed forward's inputs for N agents (P bins of S tokens, B rows of L)."""

    tokens: jax.Array  # [N, P, S] int32
    positions: jax.Array  # [N, P, S] int32 depth of each node
    attend_end: jax.Array  # [N, P, S] int32 end of the node's subtree (padding: s + 1)
    token_mask: jax.Array  # [N, P, S] bool real nodes
    parent: jax.Array  # [N, P, S] int32 in-bin index of the parent (roots, padding: s)
    node_index: jax.Array  # [N, B, L] int32 flat p·S + s of row token (b, i) (0: none)
    predicted: jax.Array  # [N, B, L] bool a packed log-probability exists for (b, i)


def check_mode(mode: str) -> str:
    check_choice("packing", mode, PACKING_MODES)
    return mode


def budget_for(longest: int, min_budget: int = 0) -> int:
    """The smallest BUDGETS entry >= max(longest, min_budget)."""
    need = max(longest, min_budget, 1)
    for size in BUDGETS:
        if size >= need:
            return size
    raise ValueError(f"a row of {longest} tokens exceeds the largest bin ({BUDGETS[-1]})")


def _common_prefix(a: tuple, b: tuple) -> int:
    k = 0
    for x, y in zip(a, b):
        if x != y:
            break
        k += 1
    return k


def _assign_bins(rows: list[tuple], budget: int, share: bool) -> list[list[int]]:
    """Row indices per bin. share: lexicographic greedy (trie cost = len − lcp with the
    previous row of the bin); else first-fit decreasing on the lengths."""
    if share:
        order = sorted(range(len(rows)), key=lambda r: rows[r])
        bins, used, previous = [], budget + 1, None
        for r in order:
            cost = len(rows[r]) - (_common_prefix(rows[r], previous) if previous else 0)
            if used + cost > budget:
                bins.append([])
                used, cost = 0, len(rows[r])
            bins[-1].append(r)
            used += cost
            previous = rows[r]
        return bins
    bins, free = [], []
    for r in sorted(range(len(rows)), key=lambda r: -len(rows[r])):
        for k, room in enumerate(free):
            if room >= len(rows[r]):
                bins[k].append(r)
                free[k] -= len(rows[r])
                break
        else:
            bins.append([r])
            free.append(budget - len(rows[r]))
    return bins


def _fill_bin(rows: list[tuple], members: list[int], share: bool, out: dict, p: int,
              budget: int, node_index: np.ndarray) -> None:
    """Lays out one bin depth-first (rows in lexicographic order when shared)."""
    if share:
        members = sorted(members, key=lambda r: rows[r])
    size, path, previous = 0, [], ()
    for r in members:
        row = rows[r]
        keep = _common_prefix(row, previous) if share else 0
        for node in path[keep:]:  # subtrees left behind end here
            out["attend_end"][p, node] = size
        del path[keep:]
        for depth in range(keep, len(row)):
            out["tokens"][p, size] = row[depth]
            out["positions"][p, size] = depth
            out["token_mask"][p, size] = True
            out["parent"][p, size] = path[-1] if path else size
            path.append(size)
            size += 1
        node_index[r, :len(row)] = p * budget + np.asarray(path[:len(row)])
        previous = row
    for node in path:
        out["attend_end"][p, node] = size
    assert size <= budget, (size, budget)


def pack_agent(tokens: np.ndarray, lengths: np.ndarray, include: np.ndarray, mode: str,
               budget: int) -> tuple[list[list[int]], dict[int, tuple]]:
    """One agent's bins (row indices) and its included rows {row: token tuple}."""
    rows = {int(r): tuple(int(t) for t in tokens[r, :lengths[r]])
            for r in np.flatnonzero(include)}
    keys = list(rows)
    bins = _assign_bins([rows[r] for r in keys], budget, share=mode == "tree")
    return [[keys[i] for i in b] for b in bins], rows


def pack_rows(tokens, token_mask, loss_mask, mode: str, min_budget: int = 0,
              skip=None, bin_buckets=DEFAULT_BIN_BUCKETS) -> PackedRows:
    """Packs [N, B, L] rows (real tokens contiguous from position 0) into [N, P, S] bins,
    P the bins needed rounded up to the ladder `bin_buckets` (empty bins are padding).

    A row takes part for agent a when it has a loss token there and skip[a, b] ([N, B]
    bool, optional) is False; rows must be right-padded (token_mask a prefix of each row).
    """
    check_mode(mode)
    if mode == "none":
        raise ValueError("pack_rows packs; mode 'none' keeps the padded rows")
    tokens, token_mask, loss_mask = (np.asarray(x) for x in (tokens, token_mask, loss_mask))
    if tokens.ndim != 3 or token_mask.shape != tokens.shape or loss_mask.shape != tokens.shape:
        raise ValueError(f"tokens, token_mask, loss_mask must be [N, B, L]; got {tokens.shape}, "
                         f"{token_mask.shape}, {loss_mask.shape}")
    n, b, length = tokens.shape
    lengths = token_mask.sum(axis=2)
    if not np.array_equal(token_mask, np.arange(length)[None, None, :] < lengths[..., None]):
        raise ValueError("pack_rows needs right-padded rows (real tokens first)")
    include = loss_mask.any(axis=2)
    if skip is not None:
        include &= ~np.asarray(skip, bool)
    longest = int(lengths[include].max()) if include.any() else 1
    budget = budget_for(longest, min_budget)
    packed = [pack_agent(tokens[a], lengths[a], include[a], mode, budget) for a in range(n)]
    num_bins = bucket_count(max(len(bins) for bins, _ in packed), bin_buckets)
    out = dict(tokens=np.zeros((n, num_bins, budget), np.int32),
               positions=np.zeros((n, num_bins, budget), np.int32),
               attend_end=np.tile(np.arange(1, budget + 1, dtype=np.int32), (n, num_bins, 1)),
               token_mask=np.zeros((n, num_bins, budget), bool),
               parent=np.tile(np.arange(budget, dtype=np.int32), (n, num_bins, 1)))
    node_index = np.zeros((n, b, length), np.int32)
    for a, (bins, rows) in enumerate(packed):
        row_list = [rows.get(r, ()) for r in range(b)]
        view = {k: v[a] for k, v in out.items()}
        for p, members in enumerate(bins):
            _fill_bin(row_list, members, mode == "tree", view, p, budget, node_index[a])
    previous = np.pad(token_mask[:, :, :-1], ((0, 0), (0, 0), (1, 0)))
    predicted = token_mask & previous & include[..., None]
    return PackedRows(**{k: jnp.asarray(v) for k, v in out.items()},
                      node_index=jnp.asarray(node_index), predicted=jnp.asarray(predicted))


def pad_packed(packed: PackedRows, bins: int, budget: int) -> PackedRows:
    """The same packing in a larger layout [N, bins, budget] (bins >= P, budget >= S):
    the new slots are padding (token_mask False, attend_end s + 1, parent s), and
    node_index is re-addressed to p·budget + s. Log-probabilities, loss and gradients are
    unchanged; the padding costs its FLOPs (a padded slot is computed like a real one)."""
    n, p, s = packed.tokens.shape
    if bins < p or budget < s:
        raise ValueError(f"cannot pad [{p}, {s}] bins into a smaller [{bins}, {budget}]")
    if (bins, budget) == (p, s):
        return packed

    def grow(x, fill):
        out = np.full((n, bins, budget), fill, np.asarray(x).dtype)
        out[:, :p, :s] = np.asarray(x)
        return out

    slot = np.arange(budget, dtype=np.int32)
    attend_end = np.broadcast_to(slot + 1, (n, bins, budget)).copy()
    attend_end[:, :p, :s] = np.asarray(packed.attend_end)
    parent = np.broadcast_to(slot, (n, bins, budget)).copy()
    parent[:, :p, :s] = np.asarray(packed.parent)
    node_index = np.asarray(packed.node_index)
    node_index = (node_index // s) * budget + node_index % s
    return PackedRows(tokens=jnp.asarray(grow(packed.tokens, 0)),
                      positions=jnp.asarray(grow(packed.positions, 0)),
                      attend_end=jnp.asarray(attend_end), token_mask=jnp.asarray(
                          grow(packed.token_mask, False)), parent=jnp.asarray(parent),
                      node_index=jnp.asarray(node_index.astype(np.int32)),
                      predicted=packed.predicted)


def reusable_layout(shape: tuple[int, int, int], compiled, max_growth: float
                    ) -> tuple[int, int, int] | None:
    """The cheapest compiled (rows, bins, budget) that holds `shape` = (B, P, S) within
    max_growth times its slots P·S (None: none does, compile the new shape). Extra rows
    are free to the packed forward (rows without a loss token are never packed)."""
    b, p, s = shape
    fits = [(bins * budget, rows, (rows, bins, budget)) for rows, bins, budget in compiled
            if rows >= b and bins >= p and budget >= s
            and bins * budget <= max_growth * p * s]
    return min(fits)[2] if fits else None


def pad_rows(packed: PackedRows, rows: int) -> PackedRows:
    """`packed` for a minibatch padded to `rows` rows (the new rows are not predicted)."""
    pad = ((0, 0), (0, rows - packed.node_index.shape[1]), (0, 0))
    return packed.replace(node_index=jnp.pad(packed.node_index, pad),
                          predicted=jnp.pad(packed.predicted, pad))


def packed_logprobs(model, packed_agent: PackedRows, *, remat: str = "none",
                    chunk: int | None = None) -> jax.Array:
    """[B, L] row log-probabilities from one agent's packed forward (fields without the
    agent axis); `model` a Transformer (hidden_states + token_logprobs), the output
    projection in chunks of `chunk` nodes (default its config.logits_chunk; no [P·S, V]
    logits held).

        logp[b, i] = z[parent(n), tokens[n]] − logsumexp z[parent(n)],  n = node_index[b, i]
    """
    x = packed_agent
    if x.tokens.ndim != 2 or x.node_index.ndim != 2:
        raise ValueError(f"one agent's packed rows: tokens [P, S], node_index [B, L]; got "
                         f"{x.tokens.shape}, {x.node_index.shape}")
    p, s = x.tokens.shape
    hidden, _ = model.hidden_states(x.tokens, positions=x.positions, token_mask=x.token_mask,
                                    attend_end=x.attend_end, remat=remat)  # [P, S, D]
    flat = hidden.reshape(p * s, -1)
    parent = (jnp.arange(p)[:, None] * s + x.parent).reshape(-1)  # flat parent of each node
    node_logp = model.token_logprobs(flat[parent], x.tokens.reshape(-1), chunk)
    return jnp.where(x.predicted, node_logp[x.node_index], 0.0)
