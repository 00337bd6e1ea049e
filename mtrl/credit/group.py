"""Group-relative advantages over one group of G sibling samples.

Every estimator here takes one group, `rewards` of shape [G], and an optional boolean
`mask` [G] of present members, and returns advantages [G]. Callers vmap over groups.
Absent members (mask false) never enter any statistic of the others, and their
advantage is exactly 0, whatever their reward holds (NaN included).

Registered in `GROUP_ADVANTAGES` with `group_function(name, unscaled=...,
single_sample=...)` under one common signature `fn(rewards[G], mask[G] | None, **opts)
-> [G]`; the entry (GroupFunction) is called like the function and declares its traits:
`unscaled` (its advantages, without normalize_std, are return differences with no
scale: what REFUEL regresses on) and `single_sample` (a group of one sample gets a
nonzero advantage, so G = 1 trains):

  grpo      (r − mean) / (std + ε)          std with `ddof` (default 1, unbiased), ε = 1e-6
            (Shao et al. 2024, DeepSeekMath; the std is added to, not floored by, ε)
  dr_grpo   r − mean                        (Liu et al. 2025, "Understanding R1-Zero-Like
            Training"; Dr. GRPO removes the std division)
  mean      r − mean                        the MAGRPO tree baseline; same value as dr_grpo
  rloo      r_i − mean_{j≠i} r_j             (Ahmadian et al. 2024, "Back to Basics")
  max       r − max                         best sibling as baseline (all advantages ≤ 0)
  raw       r                               no baseline

The four baseline estimators (mean, rloo, max, raw) take the tree-advantage options
`normalize_std=False, ddof=0, std_floor=1e-6`: with `normalize_std` the baseline-
subtracted value is divided by max(std, std_floor), std being the population std
(ddof=0) of the present members' rewards. A floor rather than an additive ε keeps
advantages exactly scale-free whenever the group has spread.

Degenerate groups: a lone present member gets 0 from every estimator but raw (rloo has
no "others" then; we take the member itself as its baseline); variances divide by
max(n − ddof, 1), so nothing is NaN. Means are summed relative to a present member, so
a constant group gets exactly 0 rather than a rounding residue divided by ε.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import jax
import jax.numpy as jnp

from mtrl.registry import Registry

Array = jax.Array
GroupAdvantageFn = Callable[..., Array]



@dataclasses.dataclass(frozen=True)
class GroupFunction:
    """A GROUP_ADVANTAGES entry: the function and its traits (module docstring)."""

    fn: GroupAdvantageFn
    unscaled: bool
    single_sample: bool

    def __call__(self, rewards, mask=None, **opts) -> Array:
        return self.fn(rewards, mask, **opts)


GROUP_ADVANTAGES: Registry[GroupFunction] = Registry("group advantage")


def group_function(name: str, *, unscaled: bool, single_sample: bool):
    """Decorator: registers `fn` in GROUP_ADVANTAGES under `name` with its traits."""

    def add(fn: GroupAdvantageFn) -> GroupAdvantageFn:
        GROUP_ADVANTAGES.register(name)(GroupFunction(fn, unscaled, single_sample))
        return fn

    return add

DEFAULT_GRPO_DDOF = 1
DEFAULT_GRPO_EPSILON = 1e-6
DEFAULT_STD_FLOOR = 1e-6


def as_float(x) -> Array:
    """Array view of `x` in a floating dtype (integers and bools become float32)."""
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.float32)
    return x


def check_group(rewards, mask=None, name: str = "rewards",
                stream: str = "group") -> tuple[Array, Array]:
    """Validates one stream: `rewards` [G] float and `mask` [G] bool (all true if None).
    stream: what the axis is, for messages ("group" of G samples, "trajectory" of K
    turns)."""
    rewards = as_float(rewards)
    if rewards.ndim != 1:
        raise ValueError(f"{name} must be one {stream} of rank 1, got shape {rewards.shape}; "
                         f"vmap over leading axes")
    if mask is None:
        return rewards, jnp.ones(rewards.shape, bool)
    mask = jnp.asarray(mask)
    if mask.shape != rewards.shape:
        raise ValueError(f"{stream} mask shape {mask.shape} must equal {name} shape "
                         f"{rewards.shape}")
    return rewards, mask.astype(bool)


def masked_count(mask: Array) -> Array:
    return jnp.sum(mask, dtype=jnp.int32)


def _first_present(x: Array, mask: Array) -> Array:
    """x at the first present entry (0 if none): a shift that makes constant groups exact."""
    return jnp.where(jnp.any(mask), x[jnp.argmax(mask)], 0.0)


def masked_mean(x: Array, mask: Array) -> Array:
    """Mean of the entries of `x` where `mask`; 0 for an empty mask.

    Summed relative to a present member, so a constant group's mean is that constant
    exactly (a rounding residue would otherwise be blown up by a 1e-6 std floor).
    """
    shift = _first_present(x, mask)
    total = jnp.sum(jnp.where(mask, x - shift, 0.0))
    return shift + total / jnp.maximum(masked_count(mask), 1)


def masked_std(x: Array, mask: Array, ddof: int = 0) -> Array:
    """sqrt(Σ_mask (x − mean)² / max(n − ddof, 1)); 0 for fewer than 2 present entries."""
    mean = masked_mean(x, mask)
    squares = jnp.sum(jnp.where(mask, jnp.square(x - mean), 0.0))
    return jnp.sqrt(squares / jnp.maximum(masked_count(mask) - ddof, 1))


def _check_ddof(ddof: int) -> None:
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 (population std) or 1 (unbiased), got {ddof!r}")


def _check_normalization(ddof: int, std_floor: float) -> None:
    _check_ddof(ddof)
    if std_floor <= 0:
        raise ValueError(f"std_floor must be > 0, got {std_floor}")


def _finish(centered: Array, rewards: Array, mask: Array, normalize_std: bool,
            ddof: int, std_floor: float) -> Array:
    """Optional division by the floored std, then zero for absent members."""
    if normalize_std:
        centered = centered / jnp.maximum(masked_std(rewards, mask, ddof), std_floor)
    return jnp.where(mask, centered, 0.0)


@group_function("mean", unscaled=True, single_sample=False)
def mean_baseline_advantages(rewards, mask=None, *, normalize_std: bool = False,
                             ddof: int = 0, std_floor: float = DEFAULT_STD_FLOOR) -> Array:
    """A_i = r_i − mean_j r_j over present members (optionally / max(std, floor))."""
    rewards, mask = check_group(rewards, mask)
    _check_normalization(ddof, std_floor)
    return _finish(rewards - masked_mean(rewards, mask), rewards, mask, normalize_std,
                   ddof, std_floor)


@group_function("rloo", unscaled=False, single_sample=False)
def rloo_advantages(rewards, mask=None, *, normalize_std: bool = False, ddof: int = 0,
                    std_floor: float = DEFAULT_STD_FLOOR) -> Array:
    """RLOO (Ahmadian et al. 2024): A_i = r_i − (Σ_{j≠i} r_j) / (n − 1).

    Equals n/(n − 1) · (r_i − mean). A lone present member gets 0.
    """
    rewards, mask = check_group(rewards, mask)
    _check_normalization(ddof, std_floor)
    n = masked_count(mask)
    # Work with offsets from a present member so a constant group gives exactly 0.
    offsets = jnp.where(mask, rewards - _first_present(rewards, mask), 0.0)
    others = (jnp.sum(offsets) - offsets) / jnp.maximum(n - 1, 1)
    centered = jnp.where(n > 1, offsets - others, 0.0)
    return _finish(centered, rewards, mask, normalize_std, ddof, std_floor)


@group_function("max", unscaled=False, single_sample=False)
def max_baseline_advantages(rewards, mask=None, *, normalize_std: bool = False,
                            ddof: int = 0, std_floor: float = DEFAULT_STD_FLOOR) -> Array:
    """A_i = r_i − max_j r_j over present members: the best sibling scores 0."""
    rewards, mask = check_group(rewards, mask)
    _check_normalization(ddof, std_floor)
    best = jnp.max(jnp.where(mask, rewards, -jnp.inf))
    best = jnp.where(jnp.any(mask), best, 0.0)
    return _finish(rewards - best, rewards, mask, normalize_std, ddof, std_floor)


@group_function("raw", unscaled=True, single_sample=True)
def raw_advantages(rewards, mask=None, *, normalize_std: bool = False, ddof: int = 0,
                   std_floor: float = DEFAULT_STD_FLOOR) -> Array:
    """A_i = r_i (no baseline); with `normalize_std`, r_i / max(std, floor)."""
    rewards, mask = check_group(rewards, mask)
    _check_normalization(ddof, std_floor)
    return _finish(rewards, rewards, mask, normalize_std, ddof, std_floor)


@group_function("grpo", unscaled=False, single_sample=False)
def grpo_advantages(rewards, mask=None, *, ddof: int = DEFAULT_GRPO_DDOF,
                    epsilon: float = DEFAULT_GRPO_EPSILON) -> Array:
    """GRPO (Shao et al. 2024): A_i = (r_i − mean) / (std + ε).

    std uses `ddof` (1: unbiased N−1, the default, as in common GRPO trainers; 0:
    population). ε is added to the std (not placed under the square root).
    Example: rewards [1, 0, 0, 0], ddof=1, ε=1e-6 → [1.499997, −0.499999 ×3].
    """
    rewards, mask = check_group(rewards, mask)
    _check_ddof(ddof)
    if epsilon < 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon}")
    centered = rewards - masked_mean(rewards, mask)
    return jnp.where(mask, centered / (masked_std(rewards, mask, ddof) + epsilon), 0.0)


@group_function("dr_grpo", unscaled=True, single_sample=False)
def dr_grpo_advantages(rewards, mask=None) -> Array:
    """Dr. GRPO (Liu et al. 2025): A_i = r_i − mean, no std division."""
    return mean_baseline_advantages(rewards, mask)


def group_advantages(rewards, mask: Optional[Array] = None, *, estimator: str = "grpo",
                     **opts) -> Array:
    """Looks `estimator` up in GROUP_ADVANTAGES and applies it to one group."""
    return GROUP_ADVANTAGES.get(estimator)(rewards, mask, **opts)
