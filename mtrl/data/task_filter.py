"""The learnable-band task filter: keep the training tasks whose pass rate under the
base model is neither 0 (no reward signal: every sample of a group fails, so every
group-relative advantage is 0) nor 1 (nothing left to learn).

Pass rates are estimated once before RL with a few samples per task
(tools/select_learnable_tasks.py) and cached in a JSON file:

  {"task_ids": [kept ids], "pass_rates": {id: rate}, "samples": k, ...}

which a config reads through `data.options.train_ids_file` (the train split only:
validation and test stay whole, so their numbers are comparable across runs).

With a shaped reward (partial credit before the tests pass) the signal is whether a
group's rewards differ, not whether some sample solved the task: the "reward" band
keeps the tasks whose sampled rewards are not all equal (`reward_band`).
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any, Mapping, Sequence


def learnable_band(pass_rates: Mapping[str, float], low: float = 0.0, high: float = 1.0
                   ) -> list[str]:
    """Ids with low < rate < high, in the mapping's order."""
    if not 0.0 <= low < high <= 1.0:
        raise ValueError(f"need 0 <= low < high <= 1, got low={low}, high={high}")
    return [task_id for task_id, rate in pass_rates.items() if low < rate < high]


def reward_band(reward_spreads: Mapping[str, float]) -> list[str]:
    """Ids whose sampled rewards were not all equal (max − min > 0), in order."""
    return [task_id for task_id, spread in reward_spreads.items() if spread > 0]


def write_task_ids(path: str | os.PathLike, pass_rates: Mapping[str, float],
                   samples: int, reward_spreads: Mapping[str, float] | None = None,
                   **meta: Any) -> list[str]:
    """Writes the cache file; returns the kept ids: the learnable band of the pass
    rates, or with `reward_spreads` ({id: max − min sampled reward}) the reward band."""
    kept = learnable_band(pass_rates) if reward_spreads is None else reward_band(reward_spreads)
    record = {"task_ids": kept, "pass_rates": dict(pass_rates), "samples": samples, **meta}
    if reward_spreads is not None:
        record.update(band="reward", reward_spreads=dict(reward_spreads))
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2))
    return kept


def earlier_pass_rates(path: str | os.PathLike, samples: int) -> dict[str, float]:
    """The pass rates an existing cache file holds ({} if there is none), to extend it
    with more tasks; its rates must come from the same number of samples."""
    path = pathlib.Path(path)
    if not path.is_file():
        return {}
    record = json.loads(path.read_text())
    if record.get("band") == "reward":
        raise ValueError(f"{path} is a reward band: extending it with pass rates would drop "
                         f"its reward spreads; score the reward band in one run")
    if record.get("samples") != samples:
        raise ValueError(f"{path} holds rates from {record.get('samples')} samples per task, "
                         f"not {samples}: extend it with the same --samples")
    return {str(k): float(v) for k, v in record["pass_rates"].items()}


def read_task_ids(path: str | os.PathLike) -> list[str]:
    """The kept ids of a cache file (one-line errors naming the option)."""
    field = "config.data.options.train_ids_file"
    path = pathlib.Path(os.path.expanduser(os.fspath(path)))
    if not path.is_file():
        raise ValueError(f"{field}: {path} does not exist (write it with "
                         f"tools/select_learnable_tasks.py)")
    try:
        ids = json.loads(path.read_text())["task_ids"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise ValueError(f"{field}: {path} is not a task-id file ({e})") from None
    if not ids:
        raise ValueError(f"{field}: {path} keeps no tasks (no base-model pass rate strictly "
                         f"between 0 and 1)")
    return [str(i) for i in ids]


def keep_tasks(tasks: Sequence, ids: Sequence[str]) -> list:
    """The tasks whose task_id is in `ids`; an id matching no task is an error."""
    wanted = set(ids)
    kept = [task for task in tasks if str(task.task_id) in wanted]
    missing = wanted - {str(task.task_id) for task in kept}
    if missing:
        raise ValueError(f"config.data.options.train_ids_file: ids not in the train split: "
                         f"{sorted(missing)[:5]}")
    return kept
