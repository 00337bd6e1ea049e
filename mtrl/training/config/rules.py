"""The checks across config sections: one ordered list of small named rules.

A rule's parameters name the parsed sections it reads (RunConfig field names); it
raises ValueError with one line naming the field and what to do. `run_rules` calls
every rule whose sections all parsed (a section that failed has its own lines
already) and returns every line, so a config's errors are reported at once. The
rules that need the built environment are a list of their own
(training/run/built_rules.py). No rule names an entry of a registry: each reads the
entries' declared traits.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping

from mtrl.data.demonstrations import per_agent
from mtrl.losses import POLICY_LOSSES
from mtrl.parallel.process_rollout import check_supported
from mtrl.rollout.batch import round_up_pow2
from mtrl.training.advantages.registry import tree_estimators
from mtrl.training.sft.sft_data import first_phase_kinds


def tree_fits_node_cap(rollout, train) -> None:
    """A tree too large for rollout.max_nodes_per_turn fails here, before models."""
    try:
        rollout.check_capacity(train.tasks_per_step)
    except ValueError as e:
        raise ValueError(f"config.rollout: {e} (with train.tasks_per_step="
                         f"{train.tasks_per_step})") from None


def minibatches_split_rows(train, rollout, loss) -> None:
    """train.minibatches splits every step's rows evenly.

    A step's batch has a power-of-two number of rows, at least
    round_up_pow2(tasks_per_step·G, 8) (make_batch pads to a power of two >= 8 and the
    turn-1 rows, P·G, are always there; the zero-advantage filter pads to one too), and
    ppo_update deals them into M equal minibatches of whole units (the loss's group
    size: REFUEL's pairs). So M units must be a power of two no larger than the smallest
    batch. (With k processes the rows of all are gathered: k·b rows, a power of two
    when k is.)"""
    objective = loss.objective
    unit = POLICY_LOSSES.get(objective.loss).group_size
    smallest = round_up_pow2(train.tasks_per_step * rollout.num_generations, 8)
    rows = train.minibatches * unit
    if rows & (rows - 1) or rows > smallest:
        whole = f" of whole groups of {unit} rows (loss {objective.loss!r})" if unit > 1 else ""
        raise ValueError(f"config.train.minibatches: {train.minibatches} does not split every "
                         f"step's rows into equal minibatches{whole}; a step has a "
                         f"power-of-two number of rows, at least {smallest} "
                         f"(train.tasks_per_step x rollout.num_generations, rounded up to a "
                         f"power of two >= 8), so use a power of two <= {smallest // unit}")


def group_has_members(credit, rollout) -> None:
    """G is at least the estimator's minimum group size (its declared trait): a group
    of one gives every group-relative advantage 0, so every update is skipped."""
    least = credit.entry.group_minimum(credit.options)
    if rollout.num_generations < least:
        raise ValueError(f"config.rollout.num_generations: {rollout.num_generations} sample "
                         f"per node leaves every group of credit.estimator="
                         f"{credit.estimator!r} ({credit.options}) fewer than its {least} "
                         f"members, so every advantage is 0; use >= {least} (or an "
                         "estimator without a baseline, e.g. magrpo with baseline raw)")


def groups_fit_generations(loss, rollout) -> None:
    """A loss whose rows form groups of siblings (REFUEL's pairs) needs G a multiple."""
    objective = loss.objective
    unit = POLICY_LOSSES.get(objective.loss).group_size
    if rollout.num_generations % unit:
        raise ValueError(f"config.rollout.num_generations: loss {objective.loss!r} groups "
                         f"{unit} sibling completions; rollout.num_generations must be a "
                         f"multiple of {unit} (even), got {rollout.num_generations}")


def returns_fit_the_loss(loss, credit) -> None:
    """A loss that regresses on return differences needs an estimator whose returns
    are unscaled (both declared traits)."""
    objective = loss.objective
    if POLICY_LOSSES.get(objective.loss).needs_unscaled_returns and \
            not credit.entry.returns_unscaled(credit.options):
        raise ValueError(f"config.credit.estimator: loss {objective.loss!r} regresses on "
                         f"return differences, but {credit.estimator!r} ({credit.options}) "
                         "scales its returns; use an estimator with unscaled returns "
                         "(magrpo with baseline mean or raw and no normalize_std, or dr_grpo)")


def episodes_end_at_success(credit, env) -> None:
    """An estimator that needs episodes ending at the first success, on an environment
    that keeps revising solved branches (the code environment by default)."""
    if credit.entry.ends_at_success and not env.ends_on_success:
        raise ValueError(f"config.credit.estimator: {credit.estimator!r} needs episodes that "
                         f"end at the first success; env {env.name!r} keeps revising "
                         "solved branches (set config.env.end_on_success=True)")


def penalties_need_a_tree_estimator(credit, filters, loss) -> None:
    """Per-completion return penalties apply to tree returns only."""
    if (filters.overlong_cache or loss.kl_in == "reward") and credit.entry.kind != "tree":
        raise ValueError(f"config.credit.estimator: return penalties (filters.overlong_cache, "
                         f"loss.kl_in=reward) need a tree estimator "
                         f"({', '.join(tree_estimators())}), got {credit.estimator!r}")


def overlong_fits_a_completion(filters, rollout) -> None:
    if filters.overlong_cache > rollout.max_new_tokens:
        raise ValueError(f"config.filters.overlong_cache: {filters.overlong_cache} exceeds "
                         f"rollout.max_new_tokens={rollout.max_new_tokens}; use at most that")


def sft_fits_the_agents(sft, rollout) -> None:
    """Per-agent SFT fields have one entry per agent (or one for all); shared parameters
    train one policy, so one first-phase kind. Every field's error at once."""
    lines = []
    try:
        kinds = first_phase_kinds(sft.first_phase, rollout.num_agents)
    except ValueError as e:
        lines.append(str(e))
        kinds = ()
    for field in ("revision_fraction", "resubmit_fraction"):
        try:
            per_agent(getattr(sft, field), rollout.num_agents, field)
        except ValueError as e:
            lines.append(str(e))
    if rollout.agent_params == "shared" and len(set(kinds)) > 1:
        lines.append("config.sft.first_phase: rollout.agent_params='shared' trains one "
                     f"policy, so give one kind, got {sft.first_phase!r}")
    if lines:
        raise ValueError("\n".join(lines))


def processes_support_it(train) -> None:
    check_supported(off_policy=bool(train.off_policy), init_from=train.init_from,
                    tasks_per_step=train.tasks_per_step)


RULES: tuple[Callable[..., None], ...] = (  # in order
    tree_fits_node_cap,
    minibatches_split_rows,
    group_has_members,
    groups_fit_generations,
    returns_fit_the_loss,
    episodes_end_at_success,
    penalties_need_a_tree_estimator,
    overlong_fits_a_completion,
    sft_fits_the_agents,
    processes_support_it,
)


def run_rules(rules, sections: Mapping[str, Any]) -> list[str]:
    """Every rule's error lines, in order; a rule whose sections did not all parse
    (None) is skipped."""
    lines = []
    for rule in rules:
        names = inspect.signature(rule).parameters
        if any(sections.get(name) is None for name in names):
            continue
        try:
            rule(**{name: sections[name] for name in names})
        except ValueError as e:
            lines.extend(str(e).splitlines())
    return lines
