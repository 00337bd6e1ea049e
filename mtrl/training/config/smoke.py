"""`--smoke`: any config, shrunk to run end to end in a minute or two.

A researcher's first command should show in a minute that the pipeline works (SFT,
evaluation, an RL step, checkpoint, test, export) before a real run takes an hour:
`--config.train.steps=2` alone still ran 550 SFT updates per agent. The preset keeps
the experiment's shape (model, environment, method, turns, agents) and cuts its
sizes: one RL step of at most 2 tasks with G <= 2, at most 4 SFT updates (2 in a
first phase) of 2 rows, 2 validation and 2 test tasks, at most 32 new tokens a turn
(CAPS); and it runs the step's update whatever the rewards (no zero-advantage or
void-turn filter), keeps one ranked checkpoint and skips the export (SETS).
Two SFT rows, not 8: the updates still exercise the SFT step, its checkpoints and its
log, and with 8 rows SFT was two fifths of the README commands' smoke CPU (the math
configs' rows are up to 768 tokens; the seven commands, cold compile cache: 192 s ->
153 s of CPU in all).
A field set on the command line (--config.sft.steps=20) keeps its value, and
the workdir (workdir/<config>, or --workdir) gets a -smoke suffix so a real run's
directory is never mixed with a smoke run's.

The sampler also pads its requests to coarse shapes (SAMPLER_BUCKETS: at least 2
rows, 128-token chunks, caches in multiples of 256 slots). mtrl/train.py gives them to
the Trainer; they are no config field, so the run's config record holds the caps
alone. Much of a smoke run's CPU is compiling programs: with the default buckets
(from 1 row and 16 tokens) the default config's run compiled 11 sampler programs
(1-8 rows, 64- and 128-token prompts), with coarse ones 3, and the README's commands
share more of them through a persistent compilation cache (the test suite's). The
floor is 2 rows, not 8: a smoke run samples 2 tasks, and 8-row prefills of the math
configs' 512-token prompts ran 4 times the rows they needed, which costs more than the
programs it saves where programs compile fast (the test suite's XLA flags); at XLA's
defaults the two floors differ little (`python -m bench.smoke_buckets`). Padding
rows and slots are masked out, so the samples are the same up to float rounding
(tests/sampling/test_sampler.py compares differently bucketed calls: the same tokens,
log-probabilities within 1e-5).
"""

from __future__ import annotations

# (section, field) -> the most a smoke run keeps.
CAPS = {
    ("train", "steps"): 1, ("train", "tasks_per_step"): 2, ("train", "eval_interval"): 1,
    ("train", "save_interval"): 1, ("train", "eval_samples"): 0,
    ("train", "num_transcripts"): 1,
    ("sft", "steps"): 4, ("sft", "first_phase_steps"): 2, ("sft", "batch_size"): 2,
    ("data", "num_train"): 16, ("data", "num_eval"): 2, ("data", "num_test"): 2,
    ("rollout", "num_generations"): 2, ("rollout", "max_new_tokens"): 32,
}

# (section, field) -> what a smoke run sets, whatever the config says:
# - one ranked checkpoint, and no Hugging Face export (a one-step SmolLM2 smoke run
#   wrote 2.9 GB of checkpoints and export); --config.train.export_best=true asks;
# - the update runs on every group, informative or not. A smoke run's model is a few
#   SFT updates from random, so in four of the README's configs every sample of a
#   group got the same reward, the zero-advantage filter dropped all rows and the run
#   never compiled or ran its update: it did not test the update. On zero advantages
#   the step still runs everything (rows, packing, the memory check, the loss, the
#   optimizer) and says how many rows carried a gradient (informative_rows);
# - no void-turn filter (SimpleTIR): a smoke model writes neither code nor an answer,
#   so the filter masked every row of tool.py's step and no update ran ("no trainable
#   token"); tests/envs/tool/test_train_smoke.py runs the filter in a one-step run;
# - no warm-start check (sft.check_min_exact): two SFT updates copy nothing, so the
#   check would lengthen SFT and then stop the run (tests/training/sft/ runs the check).
SETS = {("train", "keep_best"): 1, ("train", "export_best"): False,
        ("train", "drop_zero_advantage"): False, ("filters", "void_turns"): False,
        ("sft", "check_min_exact"): 0.0}

# mtrl.sampling.BucketPolicy fields of a smoke run's sampler.
SAMPLER_BUCKETS = dict(min_batch=2, min_length=128, cache_multiple=256)


def apply_smoke(config, keep: frozenset[str] = frozenset()) -> dict[str, int]:
    """Lowers each CAPS field the config has to its cap and sets each SETS field, in
    place, except the dotted fields in `keep` (set on the command line); returns what
    changed."""
    changed = {}
    for (section, field), value in SETS.items():
        if f"{section}.{field}" not in keep and section in config and field in config[section] \
                and config[section][field] != value:
            config[section][field] = value
            changed[f"{section}.{field}"] = value
    for (section, field), cap in CAPS.items():
        if f"{section}.{field}" in keep:
            continue
        if section in config and field in config[section]:
            value = config[section][field]
            if isinstance(value, int) and not isinstance(value, bool) and value > cap:
                config[section][field] = cap
                changed[f"{section}.{field}"] = cap
    return changed
