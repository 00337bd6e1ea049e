"""The run's resolved config: written to the workdir, stored in checkpoints, and
compared on resume. It is the record parse makes of the raw config (RunConfig.record,
mtrl/training/config/record.py), plain JSON data.

A run directory belongs to one experiment. `config.json` in the workdir holds the
config the run started with (every field, after overrides); resuming with a config
that differs in any field that shapes the experiment is refused with one line naming
the field, since a silently changed method or data set would mix two experiments in
one learning curve. Fields that only say how long or how often (RESUMABLE_CHANGES)
may differ: extending `train.steps` is how a finished run is continued.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any, Callable

CONFIG_FILE = "config.json"
RESUMABLE_CHANGES = frozenset({
    "train.steps", "train.eval_interval", "train.save_interval", "train.budget_minutes",
    "train.num_transcripts", "train.restore", "sft.checkpoint_every", "train.init_from",
    "train.wandb_project",  # where metrics are also sent, not what is trained
    "mesh.shape",  # a checkpoint restores onto any mesh (8 devices -> 1 is tested)
    # How the update's packed layout is padded (same loss and gradients), not what is
    # trained: a resumed run may change it to trade compiles for padding.
    "train.bin_buckets", "train.layout_growth",
})



def flatten_record(record: dict, prefix: str = "") -> dict[str, Any]:
    """{"section.field": value} of a nested record (an empty dict is a value)."""
    out = {}
    for key, value in record.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten_record(value, path + "."))
        else:
            out[path] = value
    return out


def differences(saved: dict, current: dict) -> list[tuple[str, Any, Any]]:
    """(field, saved value, current value) for every field that differs and matters.
    A field added after a record was saved is a difference here: check_resumable's
    `normalize` (training/config/migrate.py) fills it with the default the run used."""
    a, b = flatten_record(saved), flatten_record(current)
    missing = object()
    out = []
    for path in sorted(set(a) | set(b)):
        old, new = a.get(path, missing), b.get(path, missing)
        if old != new and path not in RESUMABLE_CHANGES:
            out.append((path, None if old is missing else old, None if new is missing else new))
    return out


def has_progress(workdir: str | os.PathLike) -> bool:
    """Whether `workdir` holds a checkpoint (RL or SFT) that a run would resume from."""
    for name in ("checkpoints", "sft_checkpoints"):
        directory = pathlib.Path(workdir) / name
        if directory.is_dir() and any(p.name.isdigit() for p in directory.iterdir()):
            return True
    return False


def prepare_workdir(workdir: str | os.PathLike) -> pathlib.Path:
    """Creates `workdir` and checks that files can be written in it (one-line error
    naming it, instead of a traceback at the first log line or checkpoint)."""
    path = pathlib.Path(workdir)
    probe = path / ".mtrl-write-check"
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise ValueError(f"--workdir {path}: not writable ({e.strerror or e}); choose "
                         "another --workdir") from None
    return path


def read_config(workdir: str | os.PathLike) -> dict | None:
    """The workdir's config.json, None when it has none; a one-line error naming the
    file when it is not JSON."""
    path = pathlib.Path(workdir) / CONFIG_FILE
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} is corrupt ({' '.join(str(e).split())}); delete it to "
                         "resume with this command's config (every checkpoint keeps a "
                         "copy), or use another --workdir") from None


def check_resumable(workdir: str | os.PathLike, record: dict,
                    normalize: Callable[[dict], dict] | None = None) -> None:
    """Raises a one-line ValueError when `workdir` holds progress of another config
    (`record`: this run's, RunConfig.record). `normalize` brings both records to one
    layout first (a workdir of an older layout: training/config/migrate.py)."""
    path = pathlib.Path(workdir) / CONFIG_FILE
    if not path.exists() or not has_progress(workdir):
        return
    saved = read_config(workdir)
    if normalize is not None:
        saved, record = normalize(saved), normalize(record)
    diff = differences(saved, record)
    if diff:
        field, old, new = diff[0]
        more = f" (and {len(diff) - 1} more)" if len(diff) > 1 else ""
        raise ValueError(f"config.{field} is {new!r} but the run in {workdir} used {old!r}"
                         f"{more}; resume with the run's config or use another --workdir")


def write_config(workdir: str | os.PathLike, record: dict) -> dict:
    """Writes the record (RunConfig.record) as config.json, atomically, and returns it."""
    path = pathlib.Path(workdir) / CONFIG_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)
    return record
