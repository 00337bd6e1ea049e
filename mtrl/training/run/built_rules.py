"""The rules that need the built environment: one ordered list of small named
functions, run by the build once the environment exists (config-only rules are
training/config/rules.py). Each reads the RunConfig and the built Environment and
raises ValueError with one line naming the field; `run_built_rules` returns every
line. What a consumer needs of the environment is declared where the consumer is
(an estimator's `needs`, RECIPE_NEEDS, VOID_NEEDS), never listed here by name.
"""

from __future__ import annotations

from typing import Callable

from mtrl.rollout.environment import Environment
from mtrl.training.advantages.loss_mask import VOID_NEEDS
from mtrl.training.score.answer_probs import derived_info_keys
from mtrl.training.score.recipe import RECIPE_NEEDS


def _missing(needs: frozenset, env: Environment) -> list[str]:
    reported = frozenset(getattr(env, "info_keys", ()))
    return sorted(needs - reported - derived_info_keys(reported))


def estimator_info(run, env: Environment) -> None:
    """The estimator's declared info keys are reported (or derived by the trainer:
    IGPO's answer log-probs from `truth`)."""
    missing = _missing(run.credit.entry.needs, env)
    if missing:
        raise ValueError(f"config.credit.estimator: {run.credit.estimator!r} reads step info "
                         f"{missing}, which {type(env).__name__} does not report "
                         "(docs/methods.md lists the fields); choose another estimator")


def recipe_info(run, env: Environment) -> None:
    if run.reward is not None and _missing(RECIPE_NEEDS, env):
        raise ValueError(f"config.reward.recipe: the recipe reads step info "
                         f"{sorted(RECIPE_NEEDS)}, which {type(env).__name__} does not "
                         "report; use reward.recipe='env'")


def void_filter_info(run, env: Environment) -> None:
    if run.filters.void_turns and _missing(VOID_NEEDS, env):
        raise ValueError(f"config.filters.void_turns: the filter reads step info "
                         f"{sorted(VOID_NEEDS)}, which {type(env).__name__} does not "
                         "report; set filters.void_turns=False")


BUILT_RULES: tuple[Callable[..., None], ...] = (estimator_info, recipe_info, void_filter_info)


def run_built_rules(run, env: Environment, rules=BUILT_RULES) -> list[str]:
    lines = []
    for rule in rules:
        try:
            rule(run, env)
        except ValueError as e:
            lines.append(str(e))
    return lines
