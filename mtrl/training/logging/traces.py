"""Every RL step's rollout episodes in OpenEnv's training-trace format
(train.write_traces).

`workdir/traces/step_<step, 8 digits>.jsonl` holds step s's episodes, one
`openenv.core.harness.TrainingTrace` per line: one per root-to-leaf path of a task's
tree and per agent, token for token (mtrl/envs/openenv/traces.py), read back with its
`read_traces`. The format does not depend on the environment; writing it needs only
the `openenv` package (the `openenv` extra), checked when the config is read. With
several processes each writes the share of the step's tasks it rolled out,
`step_<s>.process<k>.jsonl`.

A step's file is written whole under a temporary name and renamed, and a run that
resumes after step s first removes the files of later steps (an earlier attempt's,
which it plays again) and any half-written one, so no step's file is duplicated or
mixed.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
from typing import Sequence

TRACES_DIR = "traces"
_NAME = re.compile(r"step_(\d{8})(?:\.process(\d+))?\.jsonl(\.tmp)?")


def openenv_installed() -> bool:
    return importlib.util.find_spec("openenv") is not None


def check_traces_installed(write_traces: bool) -> None:
    """One line instead of an ImportError after the warm start, checked at config parse."""
    if write_traces and not openenv_installed():
        raise ValueError("train.write_traces=True needs OpenEnv's training-trace format: "
                         "pip install \"mtrl[openenv]\" (or set train.write_traces=False)")


def trace_file(workdir: str | os.PathLike, step: int, process: int = 0,
               processes: int = 1) -> pathlib.Path:
    """Step `step`'s file of process `process` (of `processes`)."""
    if isinstance(step, bool) or int(step) != step or step < 1:
        raise ValueError(f"step must be a positive integer, got {step!r}")
    suffix = f".process{process}" if processes > 1 else ""
    return pathlib.Path(workdir) / TRACES_DIR / f"step_{int(step):08d}{suffix}.jsonl"


def _this_process() -> tuple[int, int]:
    import jax
    return jax.process_index(), jax.process_count()


def clear_traces_after(workdir: str | os.PathLike, step: int, process: int | None = None,
                       processes: int | None = None) -> list[pathlib.Path]:
    """Removes this process's trace files of steps after `step`, and its half-written
    ones; returns them (process / processes: jax's when None)."""
    if process is None or processes is None:
        process, processes = _this_process()
    folder = pathlib.Path(workdir) / TRACES_DIR
    own = str(process) if processes > 1 else None
    removed = []
    for path in sorted(folder.glob("step_*")) if folder.is_dir() else ():
        match = _NAME.fullmatch(path.name)
        if match and match.group(2) == own and (match.group(3) or int(match.group(1)) > step):
            path.unlink()
            removed.append(path)
    return removed


def write_step_traces(workdir: str | os.PathLike, step: int, tree,
                      tasks: Sequence) -> pathlib.Path:
    """Writes step `step`'s tree (its TreeRollout; `tasks`: the tasks chosen for the
    step, of which this process rolled out its share) as training traces of every
    agent; returns the file."""
    from mtrl.envs.openenv.traces import episode_traces, write_traces
    from mtrl.parallel.process_rollout import is_multiprocess, local_tasks

    if is_multiprocess():
        tasks, _ = local_tasks(tasks)
    traces = [trace for agent in range(tree.joint_index.shape[1])
              for trace in episode_traces(tree, tasks, agent=agent)]
    path = trace_file(workdir, step, *_this_process())
    return write_traces(path, traces)
