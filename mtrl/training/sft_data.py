"""SFT options shared by every suite's demonstrations (per-agent fractions, the
first phase's row kind) and the scoring of revision demonstrations.

The demonstrations themselves come from the run's task suite
(`suite.demonstrations`, mtrl.data.suite): the prompt is exactly the agent's
observation from the environment, so SFT and RL see identical prompt tokens.
"""

from __future__ import annotations

import numpy as np

from mtrl.envs.base import Environment
from mtrl.training.sft import Revision

FIRST_PHASE_KINDS = ("first_turn", "revisions")


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
