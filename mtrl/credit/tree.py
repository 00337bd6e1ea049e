"""Returns and sibling-relative advantages on dense multi-turn rollout trees.

Layout (docs/design.md section 2): turn t = 1..T holds `r_t` of shape B + [J]*t, where B is
any batch shape (usually [P] prompts; empty when the caller vmaps over prompts) and
the t trailing J axes are the path of joint actions (j_1, …, j_t). Entry
r_t[b, j_1..j_t] is the immediate reward of joint action j_t at the node reached by
(j_1..j_{t−1}). `expanded_t` (bool, same shape) says that joint action has children
at turn t+1, whose rewards are r_{t+1}[b, j_1..j_t, :]. Entries never generated (the
subtree of a joint action that did not expand) hold arbitrary values, NaN included;
`tree_exists` derives which entries are real and every function here ignores the rest
and writes 0 there.

Returns (MAGRPO, Liu et al. 2025, "LLM Collaboration with Multi-Agent Reinforcement
Learning"; CoMLRL):

  R_T = r_T
  R_t = r_t + γ · mean_{j'} R_{t+1}[…, j']   where expanded_t
  R_t = r_t                                  where not expanded_t

Advantages take the J siblings of one node (the last axis) as a group and apply an
estimator of GROUP_ADVANTAGES (baselines mean | rloo | max | raw, optionally
divided by max(population std, 1e-6); see mtrl.credit.group).

Why a Python loop over turns and not lax.scan: each turn's array has a different
rank (one more J axis per turn), and a scan carry must keep one shape. T is a small
static number, so the unrolled loop compiles to the same handful of reductions.

Termination: a node expands iff the mean immediate reward of its J joint actions is
not strictly above the threshold (equality expands); no node expands at t = T.
"""

from __future__ import annotations

from typing import Optional, Sequence

import jax
import jax.numpy as jnp

from mtrl.credit.group import GROUP_ADVANTAGES, as_float

Array = jax.Array


def tree_layout(per_turn: Sequence, name: str = "rewards") -> tuple[tuple[int, ...], int]:
    """Validates per-turn arrays of shapes B + [J]*t and returns (B, J)."""
    if len(per_turn) == 0:
        raise ValueError(f"{name} must hold at least one turn")
    first = jnp.shape(per_turn[0])
    if len(first) < 1:
        raise ValueError(f"{name}[0] (turn 1) must have shape B + [J], got {first}")
    batch, joint = first[:-1], first[-1]
    for t, x in enumerate(per_turn, start=1):
        want = batch + (joint,) * t
        if jnp.shape(x) != want:
            raise ValueError(f"{name}[{t - 1}] (turn {t}) must have shape {want} "
                             f"(batch {batch}, J={joint}, {t} trailing J axes), "
                             f"got {jnp.shape(x)}")
    return batch, joint


def _check_same_layout(a: Sequence, b: Sequence, name_a: str, name_b: str) -> None:
    if len(a) != len(b):
        raise ValueError(f"{name_a} has {len(a)} turns but {name_b} has {len(b)}")
    layout_a, layout_b = tree_layout(a, name_a), tree_layout(b, name_b)
    if layout_a != layout_b:
        raise ValueError(f"{name_a} layout (B, J)={layout_a} != {name_b} layout {layout_b}")


def tree_exists(expanded: Sequence) -> list[Array]:
    """Which entries of each turn were generated.

    exists_1 = true everywhere;
    exists_{t+1}[…, j_t, :] = exists_t[…, j_t] ∧ expanded_t[…, j_t].
    `expanded` of a non-existing entry is ignored.
    """
    batch, joint = tree_layout(expanded, "expanded")
    exists = [jnp.ones(batch + (joint,), bool)]
    for t in range(1, len(expanded)):
        parent = exists[-1] & jnp.asarray(expanded[t - 1], bool)
        exists.append(jnp.broadcast_to(parent[..., None], batch + (joint,) * (t + 1)))
    return exists


def tree_returns(rewards: Sequence, expanded: Sequence, gamma) -> list[Array]:
    """Per-turn returns R_t (module docstring); 0 at entries never generated.

    `expanded` of the last turn is ignored (there is no turn T+1).
    """
    _check_same_layout(rewards, expanded, "rewards", "expanded")
    if isinstance(gamma, (int, float)) and not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must lie in [0, 1], got {gamma}")
    exists = tree_exists(expanded)
    r = [as_float(x) for x in rewards]
    returns = [jnp.where(exists[-1], r[-1], 0.0)]
    for t in range(len(r) - 2, -1, -1):
        has_children = exists[t] & jnp.asarray(expanded[t], bool)
        bootstrap = jnp.where(has_children, gamma * jnp.mean(returns[0], axis=-1), 0.0)
        returns.insert(0, jnp.where(exists[t], r[t] + bootstrap, 0.0))
    return returns


def tree_advantages(returns: Sequence, exists: Sequence, *, estimator: str = "mean",
                    **estimator_opts) -> list[Array]:
    """A_t = estimator(R_t over the J siblings of each node), 0 where not generated.

    `estimator` names an entry of GROUP_ADVANTAGES; `estimator_opts` go to it (e.g.
    normalize_std=True for the baselines, ddof/epsilon for grpo).
    """
    _check_same_layout(returns, exists, "returns", "exists")
    fn = GROUP_ADVANTAGES.get(estimator)
    per_group = jax.vmap(lambda r, m: fn(r, m, **estimator_opts))
    advantages = []
    for r_t, e_t in zip(returns, exists):
        r_t = as_float(r_t)
        joint = r_t.shape[-1]
        flat = per_group(r_t.reshape(-1, joint), jnp.asarray(e_t, bool).reshape(-1, joint))
        advantages.append(flat.reshape(r_t.shape))
    return advantages


def termination_mask(r_t, threshold: Optional[float]) -> Array:
    """bool [..., J]: candidate expansion of each joint action of turn t.

    A node expands iff mean_j r_t[..., j] <= threshold (not strictly above); all J joint
    actions of a node share the verdict. `threshold=None` never terminates.
    """
    r_t = as_float(r_t)
    if r_t.ndim < 1:
        raise ValueError(f"r_t must end in the J axis, got shape {r_t.shape}")
    if threshold is None:
        return jnp.ones(r_t.shape, bool)
    expands = jnp.logical_not(jnp.mean(r_t, axis=-1) > threshold)
    return jnp.broadcast_to(expands[..., None], r_t.shape)


def tree_expanded(rewards: Sequence, threshold: Optional[float],
                  num_turns: int) -> list[Array]:
    """The `expanded` masks the termination rule implies for a tree of `num_turns` turns.

    expanded_t = exists_t ∧ termination_mask(r_t) ∧ (t < num_turns).
    """
    batch, joint = tree_layout(rewards, "rewards")
    if num_turns < len(rewards):
        raise ValueError(f"num_turns={num_turns} is less than the {len(rewards)} turns given")
    exists = jnp.ones(batch + (joint,), bool)
    expanded = []
    for t, r_t in enumerate(rewards, start=1):
        expands = exists & termination_mask(r_t, threshold) & (t < num_turns)
        expanded.append(expands)
        exists = jnp.broadcast_to(expands[..., None], expands.shape + (joint,))
    return expanded
