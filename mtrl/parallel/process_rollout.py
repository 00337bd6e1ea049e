"""Host-side work of a multi-process training step (one process per host).

Every process runs the same loop. The update is one global computation over the mesh
of all processes' devices; rollouts are not: each process grows the trees of its own
share of the step's tasks with a sampler on its *local* devices and its own
environment (sandbox pool), then the processes exchange their rows:

    tasks (same list on every process: same seed)  --process_share-->  local tasks
    local rollout (local sampler, local env; keys folded with the process's group
        offset, generator.rollout(first_group=...))  -->  local rows [N, b_p, L]
    gather_rows: every process gets the rows of all, in process order  [N, P·b, L]
        (b = max_p b_p; a process with fewer rows pads them with rows whose masks are
        all false: they add nothing to any loss or gradient)
    the train step places the global rows on the mesh (ShardingPlan.shard_batch)

Why gather instead of ShardingPlan.global_rows: the row count of a tree depends on
which branches terminated, so processes hold different numbers of rows, and the PPO
minibatch shuffle (ppo_epochs.ppo_update) and the packer both index the whole batch
on the host; with every process holding the same global rows, the update is the
single-process update, row for row. The rows are token ids and masks (kilobytes to a
few megabytes a step), small next to the step's parameter traffic.

The sampler reads a process-local copy of the policy (local_params): parameters
sharded across processes are gathered once per update.
"""

from __future__ import annotations

import zlib
from typing import Any

import jax
import numpy as np

from mtrl.parallel.distributed import process_share
from mtrl.parallel.mesh import MeshConfig
from mtrl.parallel.shardings import ShardingPlan


def is_multiprocess() -> bool:
    return jax.process_count() > 1


def local_tasks(tasks: list) -> tuple[list, int]:
    """This process's share of the step's tasks and its index among the shares."""
    return process_share(tasks), jax.process_index()


def local_sampler_plan(plan: ShardingPlan | None, model_config) -> ShardingPlan | None:
    """The sampler's plan: the run's plan in one process; in several, every local
    device on `data` (None with one local device): a process samples its own tasks."""
    if not is_multiprocess():
        return plan
    devices = jax.local_devices()
    if len(devices) == 1:
        return None
    return ShardingPlan.build(MeshConfig("auto"), model_config, devices)


def allgather(x: np.ndarray) -> np.ndarray:
    """[P, ...]: `x` (same shape and dtype on every process) of every process."""
    from jax.experimental import multihost_utils
    return np.asarray(multihost_utils.process_allgather(np.asarray(x)))


def gather_rows(rows: Any, row_axis: int = 1) -> tuple[Any, int]:
    """Every process's rows (a pytree of [N, b_p, ...] arrays), concatenated along
    `row_axis` in process order and padded per process to b = max_p b_p with zero
    rows (false masks: padding), so the result [N, P·b, ...] is the same everywhere;
    and Σ_p b_p, the real rows."""
    leaves, treedef = jax.tree.flatten(rows)
    leaves = [np.asarray(jax.device_get(x)) for x in leaves]
    count = leaves[0].shape[row_axis]
    counts = allgather(np.int64(count))
    most = int(counts.max())

    def padded(x):
        if x.shape[row_axis] != count:
            raise ValueError(f"row counts differ within one batch: {x.shape} vs {count}")
        pad = [(0, 0)] * x.ndim
        pad[row_axis] = (0, most - count)
        return np.pad(x, pad)

    gathered = [allgather(padded(x)) for x in leaves]  # [P, N, b, ...]
    return jax.tree.unflatten(treedef, [np.concatenate(list(g), axis=row_axis)
                                        for g in gathered]), int(counts.sum())


def local_params(tree: Any) -> Any:
    """`tree` with every array made whole on this process (host numpy, then the
    default local device): what a process-local sampler reads."""
    if not is_multiprocess():
        return tree
    from jax.experimental import multihost_utils

    def whole(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            return jax.device_put(np.asarray(multihost_utils.process_allgather(x, tiled=True)))
        return x
    return jax.tree.map(whole, tree)


def mean_over_processes(metrics: dict[str, float]) -> dict[str, float]:
    """Each metric averaged over the processes (equal shares of tasks make the mean of
    the process means the mean over all tasks). A name that not every process reports
    (e.g. turn-2 counts where one process's trees all ended at turn 1) keeps this
    process's value: the exchange only covers the names all of them have."""
    if not is_multiprocess() or not metrics:
        return metrics
    # 31-bit ids: jax exchanges int32 unless x64 is enabled.
    ids = {zlib.crc32(name.encode()) & 0x7FFFFFFF: name for name in metrics}
    most = int(allgather(np.int32(len(ids))).max())
    mine = np.full(most, -1, np.int32)
    mine[:len(ids)] = sorted(ids)
    everyone = allgather(mine)  # [P, most]
    common = sorted(set.intersection(*(set(row[row >= 0].tolist()) for row in everyone)))
    out = dict(metrics)
    if common:
        values = allgather(np.array([metrics[ids[i]] for i in common], np.float64))
        out.update({ids[i]: float(v) for i, v in zip(common, values.mean(axis=0))})
    return out


def check_supported(*, off_policy: bool = False, band: bool = False,
                    reward_kl: bool = False, answer_scores: bool = False,
                    init_from: str = "", tasks_per_step: int | None = None) -> None:
    """One-line ValueError for a feature the multi-process loop does not run yet
    (each would need state shared between processes that is process-local today),
    or a step's tasks that do not split evenly over the processes."""
    if not is_multiprocess():
        return
    unsupported = [("config.train.off_policy", off_policy),
                   ("config.curriculum (the learnable band)", band),
                   ("config.loss.kl_in=reward", reward_kl),
                   ("config.credit.estimator scoring answers (IGPO)", answer_scores),
                   ("config.train.init_from", bool(init_from))]
    for name, used in unsupported:
        if used:
            raise ValueError(f"{name}: not supported with {jax.process_count()} processes "
                             "yet (BUILD.md, Scale-out); run it in one process")
    if tasks_per_step is not None and tasks_per_step % jax.process_count():
        raise ValueError(f"config.train.tasks_per_step: {tasks_per_step} tasks do not split "
                         f"evenly over {jax.process_count()} processes")
