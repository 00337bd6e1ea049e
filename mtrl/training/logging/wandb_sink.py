"""Optional Weights & Biases logging beside metrics.jsonl and TensorBoard
(`pip install "mtrl[wandb]"`, then `--config.train.wandb_project=NAME`).

What goes to W&B: every metrics.jsonl row (x axis `step`, the RL step), the test
split's metrics (same axis) and the SFT log lines as `sft/<tag>/<name>` (x axis
`sft/update`, so SFT's update counts never collide with RL steps). The run's config
is the resolved `config.json` record. W&B's own `_step` is never set: each metric is
bound to its axis with `define_metric`, because SFT runs before RL step 0 and W&B
drops rows whose `_step` goes backwards.

Resume: the W&B run id is kept in `workdir/wandb/run_id`, so the same command
continues the same W&B run. W&B keeps every row it was sent: steps logged after the
checkpoint a run resumes from appear twice there (metrics.jsonl, truncated on resume,
stays the exact record). Offline runs (`WANDB_MODE=offline`) are written under
`workdir/wandb/` and can be uploaded later with `wandb sync`.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import secrets
from typing import Any, Mapping

WANDB_DIR = "wandb"
RUN_ID_FILE = "run_id"
RL_AXIS = "step"
SFT_AXIS = "sft/update"


def check_wandb_installed(project: str) -> None:
    """One line instead of an ImportError deep in the run, checked at config parse."""
    if project and importlib.util.find_spec("wandb") is None:
        raise ValueError(f"train.wandb_project={project!r} needs Weights & Biases: "
                         "pip install \"mtrl[wandb]\" (or set train.wandb_project='')")


class WandbSink:
    """One W&B run per workdir; `log_rl`, `log_sft`, `close`.

    workdir: the run's folder; W&B files go to `workdir/wandb/`.
    project: the W&B project.
    config: the run's resolved config record (config.json), shown as the W&B config.
    """

    def __init__(self, workdir: str | os.PathLike, project: str, config: Mapping[str, Any]):
        import wandb  # the extra: imported only when asked for

        folder = pathlib.Path(workdir) / WANDB_DIR
        folder.mkdir(parents=True, exist_ok=True)
        id_file = folder / RUN_ID_FILE
        if id_file.exists():
            run_id = id_file.read_text().strip()
        else:
            run_id = secrets.token_hex(4)  # W&B ids: lowercase letters and digits
            id_file.write_text(run_id + "\n")
        self._run = wandb.init(project=project, dir=str(pathlib.Path(workdir)), id=run_id,
                               name=pathlib.Path(workdir).resolve().name, resume="allow",
                               config=dict(config))
        self._run.define_metric(RL_AXIS)
        self._run.define_metric(SFT_AXIS)
        self._bound: set[str] = set()

    def _bind(self, names, axis: str) -> None:
        for name in names:
            if name not in self._bound:
                self._run.define_metric(name, step_metric=axis)
                self._bound.add(name)

    def log_rl(self, step: int, metrics: Mapping[str, float]) -> None:
        """One row on the RL-step axis (metrics already converted to floats)."""
        self._bind(metrics, RL_AXIS)
        self._run.log({RL_AXIS: step, **metrics})

    def log_sft(self, tag: str, update: int, metrics: Mapping[str, float]) -> None:
        """One SFT log line, its names prefixed `sft/<tag>/`, on the SFT-update axis."""
        row = {f"sft/{tag}/{name}": value for name, value in metrics.items()}
        self._bind(row, SFT_AXIS)
        self._run.log({SFT_AXIS: update, **row})

    def close(self) -> None:
        import wandb

        self._run.finish()
        # finish() can return before W&B's service process has written the run file;
        # teardown waits for it, so the files are whole when the run says it ended.
        wandb.teardown()
