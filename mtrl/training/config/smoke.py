"""`--smoke`: any config, shrunk to run end to end in about a minute.

A researcher's first command should show in a minute that the pipeline works (SFT,
evaluation, an RL step, checkpoint, test, export) before a real run takes an hour:
`--config.train.steps=2` alone still ran 550 SFT updates per agent. The preset keeps
the experiment's shape (model, environment, method, turns, agents) and cuts its
sizes: one RL step of at most 2 tasks with G <= 2, at most 4 SFT updates (2 in a
first phase) of 8 rows, 2 validation and 2 test tasks, at most 32 new tokens a turn.
A field set on the command line (--config.sft.steps=20) keeps its value, and
the workdir defaults to workdir/<config>-smoke so a real run's directory is never
mixed with a smoke run's.
"""

from __future__ import annotations

# (section, field) -> the most a smoke run keeps.
CAPS = {
    ("train", "steps"): 1, ("train", "tasks_per_step"): 2, ("train", "eval_interval"): 1,
    ("train", "save_interval"): 1, ("train", "eval_samples"): 0,
    ("train", "num_transcripts"): 1,
    ("sft", "steps"): 4, ("sft", "first_phase_steps"): 2, ("sft", "batch_size"): 8,
    ("data", "num_train"): 16, ("data", "num_eval"): 2, ("data", "num_test"): 2,
    ("rollout", "num_generations"): 2, ("rollout", "max_new_tokens"): 32,
}


def apply_smoke(config, keep: frozenset[str] = frozenset()) -> dict[str, int]:
    """Lowers each CAPS field the config has to its cap, in place, except the dotted
    fields in `keep` (set on the command line); returns what changed."""
    changed = {}
    for (section, field), cap in CAPS.items():
        if f"{section}.{field}" in keep:
            continue
        if section in config and field in config[section]:
            value = config[section][field]
            if isinstance(value, int) and not isinstance(value, bool) and value > cap:
                config[section][field] = cap
                changed[f"{section}.{field}"] = cap
    return changed
