"""The sections the trainer itself owns: `train` (TrainConfig, the RL loop's schedule),
`sft` (SFTSection, the warm start) and `model` (ModelSection, what the build loads).

Each is a frozen dataclass validated in `__post_init__`, with one-line errors that the
config package's readers (mtrl/training/config/readers.py) prefix with the field; the
trainer, the warm start (warm_start.py) and the build (build.py) take them typed.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mtrl.config.fields import check_choice, check_bool, check_int, check_number


RESTORE_MODES = ("latest", "best", "none")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """The `train` section: the RL loop's schedule, evaluation and checkpoints.

    steps: RL steps (0: warm start and the step-0 evaluation only).
    tasks_per_step: P, tasks rolled out per step.
    ppo_epochs / minibatches: passes over a step's rows, and minibatches per pass.
    eval_interval / save_interval: steps between held-out evaluations (ranked
      checkpoints) and between latest-only checkpoints.
    keep_best: ranked checkpoints kept. eval_samples: sampled completions per task
      for pass@k at evaluation (0: greedy only). num_transcripts: evaluation
      transcripts written per evaluation. eval_turns: turns of every evaluation
      episode, validation and test (0: rollout.num_turns); a run trained on one
      turn is then tested with the same second attempt as a two-turn one.
    eval_feedback_gain: every evaluation also measures feedback use: each failed
      turn t < T's next turn is played again with "Try again." in place of the
      environment's observation, and <split>_feedback_gain is the difference in
      success (training/evaluate/feedback_gain.py); false skips that extra turn.
    drop_zero_advantage: train only on rows with a non-zero advantage on some loss
      token (REFUEL: whole pairs; update/row_filter.py). Not DAPO's dynamic sampling, which
      over-samples until every group's accuracy lies strictly between 0 and 1.
    export_best: write the best checkpoint as Hugging Face files at the end (runs
      loaded from a Hugging Face checkpoint only).
    restore: resume from the "latest" or "best" checkpoint in the workdir, or "none".
    budget_minutes: the run's expected time; exceeding it warns (0: no budget).
    init_from: a run's workdir whose latest weights replace the warm start ("": none).
    packing: how update rows are fed to the model (training/update/packing.py): "tree" (each
      shared prefix once), "rows" (rows packed into bins) or "none" (padded rows).
    remat: per-layer activation rematerialisation of the update's and the SFT warm
      start's forward, "none" | "dots" | "full".
    pack_budget: the smallest packed bin in tokens (0: the longest row's bucket).
    bin_buckets: the ladder a packed update's bin count is rounded up to, so
      a run compiles a few layouts (training/update/buckets.py): "none" (exact: a
      program per count met), "pow2", a ratio such as "1.25" (1, 2, 3, 4, 5, 6, 8, 10,
      12, 15, ...), or "auto": 1.25 on CPU, pow2 on an accelerator (`python -m
      bench.layout_reuse`: where a compile costs ~3,300 padded slots, as for SmolLM2
      on this CPU, only 1.25 saves time over 40 steps and exact wins over 200; where it
      costs ~1M slots, as on a GPU, pow2 with growth 2 saves most compiles).
    layout_growth: a packed minibatch runs in an already compiled layout with at most
      this many times its slots instead of compiling its own (>= 1; 0: the backend's,
      1 on CPU, 2 on an accelerator). Neither field changes the loss or gradients.
    off_policy: 1 grows step k+1's rollout in the background while step k's update
      runs (one step stale; the sampler's log-probabilities are π_old), 0 on-policy
      (training/grow/async_rollout.py).
    wandb_project: also log to Weights & Biases under this project ("": off; the
      [wandb] extra; training/logging/wandb_sink.py).
    write_traces: write every RL step's rollout episodes, any environment's, in
      OpenEnv's training-trace format to workdir/traces/step_<8 digits>.jsonl (the
      [openenv] extra; training/logging/traces.py).
    """

    steps: int = 300
    tasks_per_step: int = 3
    ppo_epochs: int = 1
    minibatches: int = 1
    eval_interval: int = 20
    save_interval: int = 20
    keep_best: int = 2
    eval_samples: int = 0
    num_transcripts: int = 2
    eval_turns: int = 0
    eval_feedback_gain: bool = True
    drop_zero_advantage: bool = False
    export_best: bool = True
    restore: str = "latest"
    budget_minutes: float = 0.0
    init_from: str = ""
    packing: str = "tree"
    remat: str = "none"
    pack_budget: int = 0
    bin_buckets: str = "auto"
    layout_growth: float = 0.0
    off_policy: int = 0
    wandb_project: str = ""
    write_traces: bool = False

    def __post_init__(self):
        counts = dict(steps=0, tasks_per_step=1, ppo_epochs=1, minibatches=1, eval_interval=1,
                      save_interval=1, keep_best=1, eval_samples=0, num_transcripts=0,
                      eval_turns=0)
        for name, least in counts.items():
            check_int(name, getattr(self, name), least)
        for name in ("drop_zero_advantage", "export_best", "eval_feedback_gain",
                     "write_traces"):
            check_bool(name, getattr(self, name))
        check_choice("restore", self.restore, RESTORE_MODES)
        check_number("budget_minutes", self.budget_minutes, 0)
        # Imported here: the owners of these names import jax; this module does not.
        from mtrl.models.remat import REMAT_POLICIES
        from mtrl.training.grow.async_rollout import OFF_POLICY_LAGS
        from mtrl.training.update.packing import BUDGETS, PACKING_MODES
        check_choice("packing", self.packing, PACKING_MODES)
        check_choice("remat", self.remat, REMAT_POLICIES)
        check_int("pack_budget", self.pack_budget, 0, BUDGETS[-1])
        from mtrl.training.update.buckets import check_bin_buckets, check_layout_growth
        check_bin_buckets(self.bin_buckets)
        check_layout_growth(self.layout_growth)
        check_choice("off_policy", self.off_policy, OFF_POLICY_LAGS)
        if not isinstance(self.init_from, str):
            raise ValueError(f"init_from must be a path or '', got {self.init_from!r}")
        if not isinstance(self.wandb_project, str):
            raise ValueError(f"wandb_project must be a name or '', got {self.wandb_project!r}")


def _per_agent_value(value, name: str):
    """A number, or a sequence with one number per agent (checked against the agent
    count where the agents are known, sft_data.per_agent)."""
    if isinstance(value, (list, tuple)):
        value = tuple(value)
        items = value
    else:
        items = (value,)
    if not items or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in items):
        raise ValueError(f"{name} must be a number or one number per agent, got {value!r}")
    return value


@dataclasses.dataclass(frozen=True)
class SFTSection:
    """The `sft` section: the warm start (Trainer.warm_start, sft.py).

    enabled: run SFT before RL. steps / batch_size / learning_rate / schedule /
      adam_b2 / max_len: the SFT optimisation (per agent). fraction: share of the
      train tasks with a first-turn demonstration. revision_fraction,
      resubmit_fraction: per agent (a number or one per agent), the suite's
      revision demonstrations and the weak teacher's resubmissions. first_guess:
      the suite's teacher's fixed first answer ("": none). first_phase /
      first_phase_steps: the row kind (per agent) trained alone for the first K
      updates. checkpoint_every: updates between SFT checkpoints.
    check_min_exact: the share of held-out demonstrations of an agent's first-phase
      kind, built like the train rows from the validation tasks, that greedy decoding
      must reproduce exactly after each SFT phase (after the mixed phase only where it
      does not teach that kind's resubmission; sft/warm_start_check.py; 0, or no
      first phase: no check). Below it the phase goes on for check_extra_steps more
      updates, up to check_rounds times; then the run stops with one line.
      check_rows: held-out rows checked per agent (the first ones).
    """

    enabled: bool = True
    steps: int = 400
    batch_size: int = 32
    learning_rate: float = 2e-3
    schedule: str = "cosine"
    adam_b2: float = 0.95
    fraction: float = 1.0
    revision_fraction: Any = 0.1
    first_guess: str = ""
    resubmit_fraction: Any = 0.0
    first_phase: Any = "first_turn"
    first_phase_steps: int = 0
    max_len: int = 256
    checkpoint_every: int = 50
    check_min_exact: float = 0.0
    check_rows: int = 256
    check_extra_steps: int = 100
    check_rounds: int = 2

    def __post_init__(self):
        check_bool("enabled", self.enabled)
        for name, least in dict(steps=1, batch_size=1, max_len=2, checkpoint_every=1,
                                first_phase_steps=0, check_rows=1, check_extra_steps=1,
                                check_rounds=0).items():
            check_int(name, getattr(self, name), least)
        for name in ("learning_rate", "adam_b2", "fraction"):
            check_number(name, getattr(self, name), above=0)
        for name in ("revision_fraction", "resubmit_fraction"):
            object.__setattr__(self, name, _per_agent_value(getattr(self, name), name))
        if not isinstance(self.first_guess, str):
            raise ValueError(f"first_guess must be a term name or '', got {self.first_guess!r}")
        if isinstance(self.first_phase, list):
            object.__setattr__(self, "first_phase", tuple(self.first_phase))
        if self.enabled and not self.first_phase_steps < self.steps:
            raise ValueError(f"first_phase_steps must lie in [0, sft.steps={self.steps}), "
                             f"got {self.first_phase_steps}")
        check_number("check_min_exact", self.check_min_exact, 0)
        if self.check_min_exact > 1:
            raise ValueError(f"check_min_exact must lie in [0, 1] (0: no check), got "
                             f"{self.check_min_exact!r}")

    @property
    def checks(self) -> bool:
        """Whether the warm start is checked: a threshold and a first phase to check."""
        return self.check_min_exact > 0 and self.first_phase_steps > 0


@dataclasses.dataclass(frozen=True)
class ModelSection:
    """The `model` section: a preset (trained from scratch) or a local Hugging Face
    checkpoint ("" : the preset), its dtype and field overrides."""

    preset: str = "tiny"
    hf_checkpoint: str = ""
    dtype: str = "float32"
    overrides: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        for name in ("preset", "hf_checkpoint", "dtype"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a string, got {getattr(self, name)!r}")
        if not isinstance(self.overrides, dict):
            raise ValueError(f"overrides must be a dict, got {self.overrides!r}")
