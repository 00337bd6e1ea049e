"""What differs between the processes of a multi-process run (jax.distributed):
process 0 writes the run's files (metrics, transcripts, plots, summaries, SFT
checkpoints); every other process runs the same loop and writes through a
SilentLogger. Orbax checkpoints are the exception: all processes write them together.
"""

from __future__ import annotations

from typing import Any, Mapping


class SilentLogger:
    """MetricsLogger's interface, writing nothing (processes other than 0)."""

    def write(self, step: int, metrics: Mapping[str, Any]) -> None:
        del step, metrics

    def write_reported(self, step: int, metrics: Mapping[str, Any]) -> None:
        del step, metrics

    def write_sft(self, tag: str, update: int, metrics: Mapping[str, Any]) -> None:
        del tag, update, metrics

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def open_metrics(main: bool, workdir, resume_step: int, wandb_project: str,
                 record: Mapping[str, Any]):
    """Process 0's MetricsLogger (with a W&B sink when `wandb_project` is set; `record`
    is the config it shows), a SilentLogger on every other process."""
    if not main:
        return SilentLogger()
    from mtrl.training.logging.metrics import MetricsLogger
    sink = None
    if wandb_project:
        from mtrl.training.logging.wandb_sink import WandbSink
        sink = WandbSink(workdir, wandb_project, record)
    return MetricsLogger(workdir, resume_step=resume_step, wandb=sink)
