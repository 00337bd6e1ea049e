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

    def write_tensorboard(self, step: int, metrics: Mapping[str, Any]) -> None:
        del step, metrics

    def write_sft(self, tag: str, update: int, metrics: Mapping[str, Any]) -> None:
        del tag, update, metrics

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass
