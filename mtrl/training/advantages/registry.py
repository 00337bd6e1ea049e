"""The credit-estimator registry and the typed `credit` section.

An entry (Estimator) declares everything a consumer may ask of it, so no consumer
keeps a list of estimator names:

  fn                 fn(rollout, credit, gamma, penalty) -> per turn [P] + [J]*(t−1)
                     + [N, G] advantages of each agent's completions
  kind               "tree" (tree returns; per-completion return penalties allowed:
                     loss.kl_in=reward, filters.overlong_cache) or "path" (the
                     paper's function over root-to-leaf paths)
  needs              environment info keys read from every step
  ends_at_success    its paper's reading needs an episode to end at its first success
  options            its options dataclass (the credit.* fields it owns, with their
                     defaults; mtrl/config/options.py refuses one set for another)
  unscaled_returns   options -> whether its advantages are return differences with no
                     scaling (what REFUEL regresses on)
  min_group_size     options -> the fewest samples per node (G) its baseline needs
  paper              the citation, for docs and error messages

The `credit` section (CreditConfig): `estimator`, `credit` (cross mode: sum or mean of
a completion's joint actions, every estimator) and the selected entry's options.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from mtrl.config.fields import check_bool, check_choice
from mtrl.config.options import OptionsDecl
from mtrl.credit.joint_actions import CREDIT_REDUCTIONS
from mtrl.registry import Registry

ESTIMATOR_KINDS = ("tree", "path")
# Older configs named the baseline as the estimator: still accepted, as magrpo.
LEGACY_BASELINE_NAMES = ("mean", "max", "raw")


@dataclasses.dataclass(frozen=True)
class NoOptions:
    """An estimator with no options of its own."""


def _per_options(trait: Any, options) -> Any:
    return trait(options) if callable(trait) else trait


@dataclasses.dataclass(frozen=True, kw_only=True)
class Estimator:
    """A CREDIT_ESTIMATORS entry (module docstring); every trait is required."""

    fn: Callable
    kind: str
    needs: frozenset
    ends_at_success: bool
    options: type
    unscaled_returns: bool | Callable[[Any], bool]
    min_group_size: int | Callable[[Any], int]
    paper: str

    def __post_init__(self):
        check_choice("Estimator.kind", self.kind, ESTIMATOR_KINDS)
        if not isinstance(self.needs, frozenset):
            raise ValueError(f"Estimator.needs must be a frozenset of info keys, got {self.needs!r}")
        check_bool("Estimator.ends_at_success", self.ends_at_success)
        OptionsDecl(self.options)  # a dataclass type

    @property
    def options_decl(self) -> OptionsDecl:
        return OptionsDecl(self.options)

    def returns_unscaled(self, options) -> bool:
        return bool(_per_options(self.unscaled_returns, options))

    def group_minimum(self, options) -> int:
        return int(_per_options(self.min_group_size, options))


# The modules whose import registers the built-in estimators (mtrl/registry.py).
CREDIT_ESTIMATORS: Registry[Estimator] = Registry("credit estimator", modules=(
    "mtrl.training.advantages.tree_estimators",
    "mtrl.training.advantages.path_estimators",
))


def tree_estimators() -> tuple[str, ...]:
    """The registered estimators of kind "tree" (the ones that take return penalties)."""
    return tuple(n for n in CREDIT_ESTIMATORS.names() if CREDIT_ESTIMATORS.get(n).kind == "tree")


def estimator_options() -> dict[str, OptionsDecl]:
    """{estimator: its options declaration}: the credit section's owned fields."""
    return {n: CREDIT_ESTIMATORS.get(n).options_decl for n in CREDIT_ESTIMATORS.names()}


@dataclasses.dataclass(frozen=True)
class CreditConfig:
    """The typed `credit` section: `estimator` (a CREDIT_ESTIMATORS name, or mean | max
    | raw: magrpo with that baseline), `credit` (sum | mean) and `options`, the
    estimator's options object (None: its defaults). `CreditConfig.of(name, **options)`
    builds one from option values."""

    estimator: str = "magrpo"
    credit: str = "sum"
    options: Any = None

    def __post_init__(self):
        if self.estimator in LEGACY_BASELINE_NAMES:
            legacy = self.estimator
            object.__setattr__(self, "estimator", "magrpo")
            object.__setattr__(self, "options", CREDIT_ESTIMATORS.get("magrpo").options(
                baseline=legacy))
        check_choice("estimator", self.estimator, CREDIT_ESTIMATORS)
        check_choice("credit", self.credit, CREDIT_REDUCTIONS)
        entry = CREDIT_ESTIMATORS.get(self.estimator)
        if self.options is None:
            object.__setattr__(self, "options", entry.options())
        elif not isinstance(self.options, entry.options):
            raise ValueError(f"options of {self.estimator!r} must be {entry.options.__name__}, "
                             f"got {type(self.options).__name__}")

    @classmethod
    def of(cls, estimator: str = "magrpo", credit: str = "sum", **options) -> "CreditConfig":
        """The section with `options` (fields of the estimator's options type)."""
        name = "magrpo" if estimator in LEGACY_BASELINE_NAMES else estimator
        check_choice("estimator", name, CREDIT_ESTIMATORS)
        if estimator in LEGACY_BASELINE_NAMES:
            options.setdefault("baseline", estimator)
        return cls(name, credit, CREDIT_ESTIMATORS.get(name).options(**options))

    @property
    def entry(self) -> Estimator:
        return CREDIT_ESTIMATORS.get(self.estimator)
