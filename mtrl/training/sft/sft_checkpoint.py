"""Checkpoints of the SFT warm start, so a killed run resumes SFT exactly.

SFT trains the policies one after another, each in up to two phases (trainer.py,
`warm_start`). Its position is (agent a, phase p, update u within the phase); the
saved state is every policy's parameters (finished ones, the one in training,
untouched ones), the optimizer state of the phase in progress and its count of
skipped updates. The checkpoint's step number is the run's SFT update count so far,
a·S + (updates of earlier phases) + u with S an agent's most updates (sft.steps, plus
the phases' continuations when the warm start is checked: warm_start_check.py),
so the newest checkpoint is the furthest.

Under LoRA the parameters are each policy's adapters, and the checkpoint names the base
they sit on (checkpoints/base_record.py), checked on restore.

The SFT log (`sft.jsonl`) is cut back, on restore, to the lines it held when the
checkpoint was written: a resumed run's log has no duplicate lines.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from typing import Any

import jax.numpy as jnp

from mtrl.training.checkpoints.base_record import EXTRA_KEY, check_base
from mtrl.training.checkpoints.checkpointing import CheckpointKeeper
from mtrl.training.sft.sft import SFTProgress


@dataclasses.dataclass(frozen=True)
class SFTPosition:
    agent: int
    phase: int
    update: int  # updates of `phase` done
    params: list  # every policy's parameters at this point
    opt_state: Any
    nonfinite_updates: Any
    # Updates of this agent's earlier phases (None: a checkpoint from before the first
    # phase could be continued, whose earlier phase had sft.first_phase_steps).
    earlier: int | None = None

    def progress(self) -> SFTProgress:
        return SFTProgress(self.update, self.params[self.agent], self.opt_state,
                           self.nonfinite_updates)


def count_lines(path: pathlib.Path) -> int:
    if not path.exists():
        return 0
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def truncate_lines(path: pathlib.Path, keep: int) -> None:
    """Keeps the first `keep` lines of `path` (the file is rewritten atomically)."""
    if not path.exists():
        return
    with open(path, "rb") as f:
        lines = f.readlines()[:keep]
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "wb") as f:
        f.writelines(lines)
    os.replace(tmp, path)


class SFTCheckpoints:
    """Latest-only SFT checkpoints in `directory`, tied to the log at `log_path`;
    `base_record`: LoRA's base (base_record.py), saved with each and checked on
    restore (None: full fine-tuning)."""

    def __init__(self, directory: str | os.PathLike, log_path: str | os.PathLike,
                 base_record: dict | None = None):
        self.keeper = CheckpointKeeper(directory, keep_best=1)
        self.log_path = pathlib.Path(log_path)
        self.base_record = base_record

    def save(self, step: int, agent: int, phase: int, params: list,
             progress: SFTProgress, seconds: float, earlier: int = 0) -> None:
        state = {"params": list(params), "opt": progress.opt_state,
                 "nonfinite": jnp.asarray(progress.nonfinite_updates, jnp.float32)}
        extra = {"agent": agent, "phase": phase, "update": int(progress.update),
                 "log_lines": count_lines(self.log_path), "seconds": seconds,
                 "earlier": int(earlier)}
        if self.base_record is not None:
            extra[EXTRA_KEY] = self.base_record
        self.keeper.save_latest(step, state, extra)

    def restore(self, params: list, opt_template: Any) -> tuple[SFTPosition | None, float]:
        """(the newest whole position or None, SFT seconds spent before it); cuts the
        log back to that position (to nothing when SFT starts over). A corrupt
        checkpoint is set aside, saying so (checkpointing.py)."""
        target = {"params": list(params), "opt": opt_template,
                  "nonfinite": jnp.zeros((), jnp.float32)}
        restored = self.keeper.restore_newest_whole(
            target, say=lambda line: print(f"SFT {line}", flush=True),
            none_left="no earlier SFT checkpoint is left, SFT starts over")
        if restored is None:
            truncate_lines(self.log_path, 0)  # lines of an SFT that is redone
            return None, 0.0
        extra = restored.extra
        if self.base_record is not None:
            check_base(extra.get(EXTRA_KEY), self.base_record,
                       f"SFT checkpoint {self.keeper.step_directory(restored.step)}")
        truncate_lines(self.log_path, int(extra["log_lines"]))
        state = restored.state
        position = SFTPosition(agent=int(extra["agent"]), phase=int(extra["phase"]),
                               update=int(extra["update"]), params=list(state["params"]),
                               opt_state=state["opt"], nonfinite_updates=state["nonfinite"],
                               earlier=int(extra["earlier"]) if "earlier" in extra else None)
        return position, float(extra.get("seconds", 0.0))

    def close(self) -> None:
        """Waits for the last save; a second call does nothing."""
        if self.keeper is not None:
            self.keeper.wait()
            self.keeper.close()
            self.keeper = None
