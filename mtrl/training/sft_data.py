"""Demonstrations for the SFT warm start, as (prompt, completion) pairs per agent.

The prompt is exactly the agent's first observation from the environment, so SFT
and RL see identical prompt tokens. The built-in family has role demonstrations for
one or two agents; other data sets use their canonical solutions (one agent).
"""

from __future__ import annotations

from mtrl.envs.base import Environment
from mtrl.training.sft import Revision


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
        demos = sft_demonstrations(splits.train, fraction=config.sft.fraction,
                                   num_agents=num_agents, seed=config.seed)
        pairs = [[] for _ in range(num_agents)]
        for demo in demos:
            _, prompts = env.reset(demo.task)
            for a in range(num_agents):
                pairs[a].append((prompts[a], demo.completions[a]))
        for a, fraction in enumerate(revision_fractions(config.sft.revision_fraction,
                                                        num_agents)):
            revisions = revision_demonstrations(
                splits.train, FamilyConfig(**options), fraction=fraction,
                num_agents=num_agents, seed=config.seed)
            pairs[a].extend(revision_pairs(env, revisions)[a])
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


def revision_fractions(value, num_agents: int) -> tuple[float, ...]:
    """config.sft.revision_fraction as one fraction per agent: a number (every agent)
    or a sequence with one entry per agent (e.g. (0.2, 0.0): revisions for the helper
    only)."""
    if isinstance(value, (int, float)):
        return (float(value),) * num_agents
    fractions = tuple(float(v) for v in value)
    if len(fractions) != num_agents:
        raise ValueError(f"config.sft.revision_fraction: {len(fractions)} entries for "
                         f"{num_agents} agents")
    return fractions


def revision_pairs(env: Environment, revisions) -> list[list[tuple]]:
    """[agent] -> (second-turn prompt, correct revision) for RevisionDemonstrations.

    The wrong first attempts are scored by `env` in one batch, so each prompt carries
    the environment's own feedback on that attempt (the failing probe test), exactly
    as a rollout branch would see it. Under a context-resetting history mode the
    observation is itself the whole next prompt."""
    if not revisions:
        return [[] for _ in range(env.num_agents)]
    started = [env.reset(r.first.task) for r in revisions]
    results = env.step([state for state, _ in started],
                       [r.first.completions for r in revisions], 1)
    pairs = [[] for _ in range(env.num_agents)]
    for (_, prompts), r, result in zip(started, revisions, results):
        for a in range(env.num_agents):
            observation = result.observations[a]
            prompt = (observation if result.reset_context else
                      Revision(prompts[a], ((r.first.completions[a], observation),)))
            pairs[a].append((prompt, r.revision.completions[a]))
    return pairs
