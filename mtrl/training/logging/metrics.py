"""Scalar metrics of a run: one JSON object per line, plus TensorBoard event files
(and Weights & Biases when asked for: wandb_sink.py).

`metrics.jsonl` in the workdir holds one line per logged step:

    {"step": 120, "heldout_success": 0.25, "reward_mean": 0.41, "kl": null}

Values are floats (ints, bools, numpy and JAX scalars are converted); non-finite
values (NaN, ±inf) are written as JSON null, because JSON has no NaN and a NaN is
exactly what one wants to see flagged in the log. TensorBoard gets the same
scalars (NaN included) through tensorboardX under `workdir/tensorboard/`.

Resuming (`resume_step`): lines with step > resume_step are dropped from
metrics.jsonl (rewritten atomically) and TensorBoard is told to purge events from
resume_step + 1 on, so a run killed after its last checkpoint and restarted from
it logs every step exactly once.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import sys
import time
from typing import Any, Iterator, Mapping

import numpy as np


def summary_writer_class():
    """tensorboardX's SummaryWriter, imported on first use (it pulls in protobuf).

    Where torch is installed but not imported, tensorboardX's writer module imports it
    only to accept torch tensors (1.3 s of CPU per run here, about as much as all of
    the trainer's own imports); scalars need none of it, so that import is skipped while
    the module loads and works as usual afterwards."""
    if "tensorboardX.writer" in sys.modules or "torch" in sys.modules:
        from tensorboardX import SummaryWriter
        return SummaryWriter
    sys.modules["torch"] = None  # `import torch` raises ImportError meanwhile
    try:
        from tensorboardX import SummaryWriter
    finally:
        del sys.modules["torch"]
    return SummaryWriter


METRICS_FILE = "metrics.jsonl"
TENSORBOARD_DIR = "tensorboard"

# Names the trainer, the plots and the summary agree on.
HELDOUT_SUCCESS = "heldout_success"  # episodic success on the held-out split
HELDOUT_SUCCESS_TURN = "heldout_success_turn{turn}"  # solved by turn t (1-based)
# Turn t+1 after a failed turn t: success with the observation minus with "Try again."
HELDOUT_FEEDBACK_GAIN = "heldout_feedback_gain"
REWARD_MEAN = "reward_mean"  # mean episodic reward of the training rollouts
KL = "kl"  # KL to the reference policy
STEP_TIME = "step_time_s"  # wall seconds per train step


def to_float(name: str, value: Any) -> float:
    """A metric value as a Python float; raises for anything but a scalar."""
    array = np.asarray(value)
    if array.size != 1 or not (np.issubdtype(array.dtype, np.number)
                               or array.dtype == np.bool_):
        raise ValueError(f"metric {name!r} must be a numeric scalar, got {value!r}")
    return float(array.reshape(()))


def _json_line(step: int, metrics: Mapping[str, float]) -> str:
    record: dict[str, Any] = {"step": step}
    for name, value in metrics.items():
        record[name] = value if math.isfinite(value) else None
    return json.dumps(record, allow_nan=False)


def read_metrics(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of a metrics.jsonl (or of the one in a workdir), in file order.

    A torn last line (a process killed mid-write) is ignored.
    """
    path = pathlib.Path(path)
    if path.is_dir():
        path = path / METRICS_FILE
    records = []
    with path.open() as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                if line.endswith("\n"):
                    raise ValueError(f"{path}:{number} is not JSON: {line[:80]!r}") from None
    return records


def _iter_lines_up_to(path: pathlib.Path, last_step: int) -> Iterator[str]:
    with path.open() as lines:
        for line in lines:
            if not line.endswith("\n"):
                return  # torn write of a killed run
            if line.strip() and json.loads(line)["step"] <= last_step:
                yield line


class MetricsLogger:
    """Writes scalar metrics to `workdir/metrics.jsonl` and TensorBoard.

    workdir: the run's folder (created if missing).
    tensorboard: also write TensorBoard event files.
    wandb: a WandbSink (wandb_sink.py) that gets the same rows, or None.
    resume_step: the step the run resumes from (see the module docstring); None
      starts appending to whatever is there.
    """

    def __init__(self, workdir: str | os.PathLike, *, tensorboard: bool = True,
                 resume_step: int | None = None, wandb=None):
        self.workdir = pathlib.Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.path = self.workdir / METRICS_FILE
        if resume_step is not None:
            self._truncate_after(resume_step)
        self._file = self.path.open("a")
        self._writer = None
        self._sft_writer = None
        self._wandb = wandb
        if tensorboard:
            SummaryWriter = summary_writer_class()
            purge = None if resume_step is None else resume_step + 1
            # tensorboardX names files by the second and opens them with 'wb': a
            # writer started in the same second as the last one would erase its
            # file. The nanosecond suffix keeps names unique and in time order.
            self._writer = SummaryWriter(logdir=str(self.workdir / TENSORBOARD_DIR),
                                         purge_step=purge, flush_secs=30,
                                         filename_suffix=f".{time.time_ns()}")

    def write(self, step: int, metrics: Mapping[str, Any]) -> None:
        """Logs `metrics` (name -> scalar) at `step`; one line, flushed."""
        if isinstance(step, bool) or int(step) != step or step < 0:
            raise ValueError(f"step must be a non-negative integer, got {step!r}")
        step = int(step)
        if "step" in metrics:
            raise ValueError("'step' is reserved for the step number")
        values = {str(name): to_float(name, value) for name, value in metrics.items()}
        self._file.write(_json_line(step, values) + "\n")
        self._file.flush()
        self._write_reported(step, values)

    def write_reported(self, step: int, metrics: Mapping[str, Any]) -> None:
        """TensorBoard and W&B only (e.g. the test split's metrics: reported, not a
        step's line in metrics.jsonl, which the exact-resume checks compare)."""
        self._write_reported(step, {str(name): to_float(name, value)
                                    for name, value in metrics.items()})

    def _write_reported(self, step: int, values: Mapping[str, float]) -> None:
        if self._writer is not None:
            for name, value in values.items():
                self._writer.add_scalar(name, value, global_step=step)
        if self._wandb is not None:
            self._wandb.log_rl(step, values)

    def write_sft(self, tag: str, update: int, metrics: Mapping[str, Any]) -> None:
        """An SFT log line (`tag`/name at `update`) to TensorBoard's own `sft` run: its
        update counts would collide with RL steps, and a resumed RL run purges its
        steps from the main run. W&B: `sft/<tag>/<name>` on its own axis."""
        if self._wandb is not None:
            self._wandb.log_sft(tag, update, {str(name): to_float(name, value)
                                              for name, value in metrics.items()})
        if self._writer is None:
            return
        if self._sft_writer is None:
            writer = summary_writer_class()
            self._sft_writer = writer(logdir=str(self.workdir / TENSORBOARD_DIR / "sft"),
                                      flush_secs=30, filename_suffix=f".{time.time_ns()}")
        for name, value in metrics.items():
            self._sft_writer.add_scalar(f"{tag}/{name}", to_float(name, value),
                                        global_step=update)

    def flush(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        if self._file.closed:
            return
        self.flush()
        self._file.close()
        if self._writer is not None:
            self._writer.close()
        if self._sft_writer is not None:
            self._sft_writer.close()
        if self._wandb is not None:
            self._wandb.close()

    def __enter__(self) -> "MetricsLogger":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _truncate_after(self, last_step: int) -> None:
        if not self.path.exists():
            return
        kept = list(_iter_lines_up_to(self.path, last_step))
        partial = self.path.with_suffix(".jsonl.tmp")
        partial.write_text("".join(kept))
        os.replace(partial, self.path)  # atomic: the old file or the new, never half
