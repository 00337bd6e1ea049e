"""Demonstrations for the SFT warm start, as (prompt, completion) pairs per agent.

The prompt is exactly the agent's first observation from the environment, so SFT
and RL see identical prompt tokens. The built-in family has role demonstrations for
one or two agents; other data sets use their canonical solutions (one agent).
"""

from __future__ import annotations

from mtrl.envs.base import Environment


def demonstration_pairs(config, env: Environment, train_tasks: list) -> list[list[tuple[str, str]]]:
    """[agent] -> list of (prompt text, completion text)."""
    num_agents = config.env.num_agents
    if config.data.name == "intfn":
        from mtrl.data.synthetic import make_splits, sft_demonstrations
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
