"""Demonstrations for the SFT warm start, as (prompt, completion) pairs per agent.

The prompt is exactly the agent's first observation from the environment, so SFT
and RL see identical prompt tokens. The built-in family has role demonstrations for
one or two agents; other data sets use their canonical solutions (one agent).
"""

from __future__ import annotations

import numpy as np

from mtrl.envs.base import Environment
from mtrl.training.sft import Revision

FIRST_PHASE_KINDS = ("first_turn", "revisions")


def demonstration_pairs(config, env: Environment, train_tasks: list) -> list[list[tuple[str, str]]]:
    """[agent] -> list of (prompt, completion text); a prompt is the first turn's text
    or, for the built-in family's revision demonstrations (config.sft.revision_fraction),
    a `Revision` (see revision_pairs)."""
    num_agents = config.env.num_agents
    if config.data.name == "intfn":
        from mtrl.data.synthetic import (make_splits, revision_demonstrations,
                                         sft_demonstrations)
        from mtrl.data.synthetic.family import FamilyConfig
        options = {k: tuple(v) if isinstance(v, list) else v
                   for k, v in dict(config.data.options).items() if k != "seed"}
        splits = make_splits(FamilyConfig(**options), num_train=config.data.num_train,
                             num_heldout=0, seed=config.seed)
        first_guess = config.sft.first_guess or None
        demos = sft_demonstrations(splits.train, fraction=config.sft.fraction,
                                   num_agents=num_agents, seed=config.seed,
                                   first_guess=first_guess)
        pairs = [[] for _ in range(num_agents)]
        for demo in demos:
            _, prompts = env.reset(demo.task)
            for a in range(num_agents):
                pairs[a].append((prompts[a], demo.completions[a]))
        fractions = per_agent(config.sft.revision_fraction, num_agents, "revision_fraction")
        resubmits = per_agent(config.sft.resubmit_fraction, num_agents, "resubmit_fraction")
        # Agents with the same fraction share one seeded set of revisions: scored once.
        for fraction in sorted(set(fractions)):
            revisions = revision_demonstrations(
                splits.train, FamilyConfig(**options), fraction=fraction,
                num_agents=num_agents, seed=config.seed, first_guess=first_guess)
            scored = revision_pairs(env, revisions, resubmit_fractions=resubmits,
                                    seed=config.seed)
            for a in range(num_agents):
                if fractions[a] == fraction:
                    pairs[a].extend(scored[a])
        return pairs
    if num_agents != 1:
        raise ValueError(f"config.sft: data set {config.data.name!r} has demonstrations for "
                         "one agent only; disable SFT or use env.num_agents=1")
    pairs = []
    for task in train_tasks:
        if task.canonical_solution:
            _, prompts = env.reset(task)
            pairs.append((prompts[0], f"```python\n{task.canonical_solution.strip()}\n```"))
    if not pairs:
        raise ValueError(f"config.sft: data set {config.data.name!r} has no canonical solutions")
    return [pairs]


def per_agent(value, num_agents: int, field: str) -> tuple[float, ...]:
    """A config.sft fraction as one value per agent: a number (every agent) or a
    sequence with one entry per agent (e.g. revision_fraction=(0.2, 0.0): revisions
    for the helper only); each must lie in [0, 1]."""
    if isinstance(value, (int, float)):
        fractions = (float(value),) * num_agents
    else:
        fractions = tuple(float(v) for v in value)
    if len(fractions) != num_agents:
        raise ValueError(f"config.sft.{field}: {len(fractions)} entries for {num_agents} agents")
    if not all(0.0 <= f <= 1.0 for f in fractions):
        raise ValueError(f"config.sft.{field}: every entry must lie in [0, 1], got {fractions}")
    return fractions


def check_first_guess(config, num_agents: int) -> None:
    """config.sft.first_guess ("" or a term of the built-in family's helper)."""
    guess = config.sft.first_guess
    if not guess:
        return
    if config.data.name != "intfn":
        raise ValueError("config.sft.first_guess is the helper's term of the built-in family: "
                         "it needs data.name='intfn'")
    from mtrl.data.synthetic.demonstrations import check_first_guess as check
    try:
        check(guess, num_agents)
    except ValueError as e:
        raise ValueError(f"config.sft.{e}") from None


def first_phase_kinds(value, num_agents: int) -> tuple[str, ...]:
    """config.sft.first_phase per agent: which demonstrations the first SFT phase
    trains on alone, "first_turn" (answers to the task prompt) or "revisions"."""
    kinds = (value,) * num_agents if isinstance(value, str) else tuple(value)
    if len(kinds) != num_agents or any(k not in FIRST_PHASE_KINDS for k in kinds):
        raise ValueError(f"config.sft.first_phase must be one of {FIRST_PHASE_KINDS} or one "
                         f"per agent ({num_agents}), got {value!r}")
    return kinds


def rows_of_kind(pairs: list[tuple], kind: str | None) -> list[tuple]:
    """The (prompt, completion) pairs of one kind (None: all of them). "revisions" are
    the later-turn demonstrations that change the previous answer: a weak teacher's
    resubmissions (resubmit_fraction) join only with all rows, so a first phase on
    revisions learns to read the feedback before the teacher's habit dilutes it."""
    if kind is None:
        return list(pairs)
    if kind == "first_turn":
        return [x for x in pairs if not isinstance(x[0], Revision)]
    return [x for x in pairs if isinstance(x[0], Revision) and x[1] != x[0].exchanges[-1][0]]


def revision_pairs(env: Environment, revisions, *,
                   resubmit_fractions: tuple[float, ...] | None = None,
                   seed: int = 0) -> list[list[tuple]]:
    """[agent] -> (second-turn prompt, revision) for RevisionDemonstrations.

    The wrong first attempts are scored by `env` in one batch, so each prompt carries
    the environment's own feedback on that attempt (the failing probe test), exactly
    as a rollout branch would see it. Under a context-resetting history mode the
    observation is itself the whole next prompt (`Revision.reset`).

    resubmit_fractions: a weak teacher, per agent (None: none). A seeded share of the
    revisions answer with the agent's first attempt unchanged, as a model that ignores
    feedback does; the rest answer correctly. SFT then leaves the agent reading the feedback in only
    part of its samples, which is the behaviour multi-turn RL is for."""
    if not revisions:
        return [[] for _ in range(env.num_agents)]
    draws = np.random.default_rng([int(seed), 11]).random(len(revisions))
    lazy = draws[:, None] < np.asarray(resubmit_fractions or (0.0,) * env.num_agents)
    started = [env.reset(r.first.task) for r in revisions]
    results = env.step([state for state, _ in started],
                       [r.first.completions for r in revisions], 1)
    pairs = [[] for _ in range(env.num_agents)]
    for (_, prompts), r, result, resubmit in zip(started, revisions, results, lazy):
        for a in range(env.num_agents):
            observation = result.observations[a]
            prompt = Revision(prompts[a], ((r.first.completions[a], observation),),
                              reset=result.reset_context)
            answer = r.first if resubmit[a] else r.revision
            pairs[a].append((prompt, answer.completions[a]))
    return pairs
