"""SFT demonstrations that suites build: later-turn prompts (`Revision`), per-agent
fractions of a config.sft option, and revision rows scored by the environment.

A suite makes its demonstrations from its own tasks (mtrl.data.suite); these helpers
are what several suites share, kept in the data layer so no suite imports the trainer.
The trainer's SFT (mtrl/training/sft/sft.py) lays a `Revision` out as token ids.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mtrl.rollout.environment import Environment


@dataclasses.dataclass(frozen=True)
class Revision:
    """A later-turn prompt: the first prompt, then the earlier turns as (completion,
    observation) pairs. Laid out exactly as the rollout builds a branch's history:

        encode(first(prompt)) + Σ_turns [encode(completion) + [eos]
                                         + encode(turn_format.next(observation))]

    so SFT on revisions trains on the token histories RL samples after; with `reset`
    (a context-resetting history mode) the history is encode(first(last observation)),
    as the rollout restarts it."""

    prompt: str
    exchanges: tuple[tuple[str, str], ...]
    # True when the environment resets the context at each turn (history modes "last",
    # "feedback"): the model then sees the last observation alone, as a first prompt.
    reset: bool = False

    def __post_init__(self):
        if not self.exchanges:
            raise ValueError("Revision needs at least one (completion, observation) exchange")


def per_agent(value, num_agents: int, field: str) -> tuple[float, ...]:
    """A config.sft fraction as one value per agent: a number or a one-entry sequence
    (every agent) or a sequence with one entry per agent (e.g.
    revision_fraction=(0.2, 0.0): revisions for the helper only); each must lie in
    [0, 1]."""
    if isinstance(value, (int, float)):
        fractions = (float(value),) * num_agents
    else:
        fractions = tuple(float(v) for v in value)
        if len(fractions) == 1:
            fractions *= num_agents
    if len(fractions) != num_agents:
        raise ValueError(f"config.sft.{field}: env.num_agents={num_agents} needs "
                         f"sft.{field} with {num_agents} entries (or one number for every "
                         f"agent), got {len(fractions)}: {tuple(value)!r}")
    if not all(0.0 <= f <= 1.0 for f in fractions):
        raise ValueError(f"config.sft.{field}: every entry must lie in [0, 1], got {fractions}")
    return fractions


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
