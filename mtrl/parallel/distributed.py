"""Multi-controller JAX: one Python process per host, joined by jax.distributed.

Every process runs the same program; `jax.devices()` then lists the devices of all
processes and a mesh over them makes one global computation (the train step), while
each process feeds only its own rows (`ShardingPlan.global_rows`) and only process 0
writes metrics and transcripts (`is_main_process`). Orbax checkpoints are written by
all processes together (each its own shards) and can be restored onto another mesh.

    DistributedConfig()                           one process (nothing to join)
    DistributedConfig(auto=True)                  TPU pod slices, SLURM, Kubernetes
                                                  JobSets: jax finds the coordinator
    DistributedConfig("10.0.0.1:1234", 2, 0)      explicit: GPU nodes, CPU processes

On CPU the collectives between processes use gloo (the jax_cpu_collectives_
implementation option); on GPU and TPU, NCCL and ICI/DCN as jax chooses.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence, TypeVar

from mtrl.config.fields import check_int

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class DistributedConfig:
    """How this process joins the run (the --coordinator_address, --num_processes,
    --process_id and --distributed_auto flags of mtrl.train).

    coordinator_address: "host:port" of process 0's coordination service ("": none).
    num_processes: processes in the run (1: a single-process run).
    process_id: this process's index in [0, num_processes).
    auto: let jax detect all three (TPU pods, SLURM); the others must stay unset.
    """

    coordinator_address: str = ""
    num_processes: int = 1
    process_id: int = 0
    auto: bool = False

    def __post_init__(self):
        check_int("num_processes", self.num_processes, 1)
        if not 0 <= self.process_id < self.num_processes:
            raise ValueError(f"process_id must lie in [0, {self.num_processes}), "
                             f"got {self.process_id!r}")
        if self.auto and (self.coordinator_address or self.num_processes != 1):
            raise ValueError("auto detects the coordinator and process count; do not also "
                             "set coordinator_address or num_processes")
        if self.num_processes > 1 and ":" not in self.coordinator_address:
            raise ValueError(f"num_processes={self.num_processes} needs coordinator_address "
                             f"'host:port', got {self.coordinator_address!r}")

    @property
    def enabled(self) -> bool:
        return self.auto or self.num_processes > 1


def initialize(config: DistributedConfig) -> bool:
    """Joins the cluster described by `config` (before any other jax call creates a
    backend); returns whether a multi-process runtime was started."""
    if not config.enabled:
        return False
    import jax
    if config.auto:
        jax.distributed.initialize()
        return True
    # Cross-process collectives of the CPU backend need an implementation (gloo is built
    # into jaxlib); the option affects the CPU client only, so GPU/TPU runs ignore it.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=config.coordinator_address,
                               num_processes=config.num_processes,
                               process_id=config.process_id)
    return True


def is_main_process() -> bool:
    """Process 0 writes metrics, transcripts, plots and summaries."""
    import jax
    return jax.process_index() == 0


def process_share(items: Sequence[T], process_index: int | None = None,
                  process_count: int | None = None) -> list[T]:
    """This process's contiguous share of `items` (e.g. a step's tasks): process p of
    P takes items[p·n/P : (p+1)·n/P]; len(items) must divide by P so that every process
    builds rows of the same shape."""
    import jax
    p = jax.process_index() if process_index is None else process_index
    count = jax.process_count() if process_count is None else process_count
    if len(items) % count:
        raise ValueError(f"{len(items)} items do not split evenly over {count} processes")
    share = len(items) // count
    return list(items[p * share:(p + 1) * share])
