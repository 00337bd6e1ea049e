"""Checkpoints of a training run: the best k by held-out success, plus the latest.

One orbax `CheckpointManager` holds every step directory. Each step stores three
items:

    state   the device pytree (parameters per agent, optimizer states, RNG keys,
            any other arrays), saved with `StandardSave`;
    extra   host state as JSON (data-iterator position, curriculum state, config);
    meta    what this module needs to restore exactly (paths of typed PRNG keys).

Retention is one orbax preservation policy, the union of two rules:

    keep(step) = step is the newest step                          (LatestN(1))
              or step is among the `keep_best` evaluated steps with
                 the highest (mode 'max') / lowest (mode 'min') metric   (BestN)

so neither rule can delete what the other keeps: orbax's plain `best_fn` +
`max_to_keep` retention would drop the newest step whenever it is not among the
best, which breaks resuming. Ties in the metric go to the later step, both in
retention (BestN sorts stably in step order) and in `best_step`.

Atomicity: orbax writes each step into a `<step>.orbax-checkpoint-tmp-*` directory
and renames it to `<step>` only after every file and the commit marker are written;
a step directory therefore either exists complete or not at all, and a process
killed mid-save leaves the previous steps intact (tested with SIGKILL); opening a
keeper removes such uncommitted leftovers (one writer per directory). Deleting an
old step is made atomic the same way: orbax renames it into `_trash/` (one rename)
and this module empties `_trash/` afterwards, so a kill mid-delete can leave
garbage in `_trash/` but never a half-deleted step that looks restorable.

Verification: once a save is committed, `checksums.sha256` (mtrl/checksums.py) is
written into its step directory; `restore` checks it first and raises
CorruptCheckpoint, one line naming the file, instead of restoring changed weights.
`restore_newest_whole` (resuming) sets a corrupt step aside into `_corrupt/` and
falls back to the previous step, saying so. Saves are asynchronous, so a step's
checksums are written at the next wait point (the next save, `wait`, `close`); a
process killed in between leaves a step without them, restored unverified and said so.

Typed PRNG keys are saved as their key data, their implementation in `meta`
(prng_checkpoint.py).
"""

from __future__ import annotations

import json
import logging
import math
import os
import pathlib
import shutil
from typing import Any, Literal, Mapping, NamedTuple

import jax
import orbax.checkpoint as ocp
from orbax.checkpoint import checkpoint_managers as policies

from mtrl.checksums import MANIFEST, ChecksumMismatch, verify_manifest, write_manifest
from mtrl.training.logging.metrics import HELDOUT_SUCCESS as DEFAULT_METRIC
from mtrl.training.checkpoints.prng_checkpoint import (check_target_keys, key_data_target,
                                                       split_typed_keys, wrap_typed_keys)

_TRASH = "_trash"
_CORRUPT = "_corrupt"  # corrupt steps set aside by restore_newest_whole
_TMP_MARKER = ".orbax-checkpoint-tmp"  # in the names of uncommitted step directories
_ITEMS = ("state", "extra", "meta")
_FORMAT_VERSION = 1


class _DropUntrackedSaveWarning(logging.Filter):
    """Latest-only saves carry no metrics on purpose; orbax warns about each one."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "did not provide metrics" not in record.getMessage()


logging.getLogger("absl").addFilter(_DropUntrackedSaveWarning())


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message is one line naming it and what
    to do (the launcher prints it as is)."""


class CorruptCheckpoint(CheckpointError):
    """A step whose files do not match their checksums (one line, naming the file)."""

    def __init__(self, step: int, detail: str):
        super().__init__(f"checkpoint step {step} is corrupt: {detail}")
        self.step = step


class Restored(NamedTuple):
    """What `CheckpointKeeper.restore` returns; unpacks as (step, state, extra)."""

    step: int
    state: Any  # the pytree, shaped like the target when one was given
    extra: dict  # the host-state JSON saved with it


def abstract_like(tree: Any) -> Any:
    """`tree` with each array leaf replaced by its ShapeDtypeStruct (shape, dtype,
    sharding): a restore target that holds no memory, so a restore never needs a second
    whole copy of the state beside the one it reads."""
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding)
                        if isinstance(x, jax.Array) else x, tree)


def _clean_metrics(metrics: Mapping[str, Any]) -> dict[str, float | None]:
    """Floats for JSON; non-finite values become None (JSON has no NaN)."""
    cleaned: dict[str, float | None] = {}
    for name, value in metrics.items():
        number = float(value)
        cleaned[str(name)] = number if math.isfinite(number) else None
    return cleaned


class CheckpointKeeper:
    """Saves and restores training state, keeping the best `keep_best` evaluated
    steps by `metric` plus the latest step.

    directory: where the step directories live (e.g. `workdir / "checkpoints"`).
    keep_best: k, evaluated checkpoints kept by metric (>= 1).
    metric: the key in `save_eval`'s metrics that ranks checkpoints.
    mode: 'max' (success, reward) or 'min' (loss).
    async_save: `save` returns once the arrays are copied to host memory (so a
      jitted step may donate the state right after; tested) and orbax writes the
      files in a background thread; `wait()` blocks until the last save is
      committed. A later save first waits for the previous one.

    Usage in a trainer: `save_eval` at evaluation steps (it is also the latest),
    `save_latest` every `save_interval` steps (a no-op at a step already saved),
    `restore('latest', target)` to resume, `restore('best', target)` to export.
    Resume only from the latest step: saving a step that already exists is refused
    by orbax.
    """

    def __init__(self, directory: str | os.PathLike, *, keep_best: int = 3,
                 metric: str = DEFAULT_METRIC, mode: Literal["max", "min"] = "max",
                 async_save: bool = True):
        if keep_best < 1:
            raise ValueError(f"keep_best must be >= 1, got {keep_best}")
        if mode not in ("max", "min"):
            raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
        if not metric:
            raise ValueError("metric must be a non-empty metric name")
        self.directory = pathlib.Path(directory).absolute()
        self.keep_best = keep_best
        self.metric = metric
        self.mode = mode
        self._metrics_cache: dict[int, dict | None] = {}
        self._unsummed: list[int] = []  # saved steps whose checksums are not written yet
        retention = policies.AnyPreservationPolicy([
            policies.LatestN(n=1),
            policies.BestN(get_metric_fn=self._rank_value, reverse=(mode == "min"),
                           n=keep_best, keep_checkpoints_without_metrics=False),
        ])
        options = ocp.CheckpointManagerOptions(
            preservation_policy=retention,
            # orbax writes a step's metrics only when best_fn is set; retention
            # itself is decided by `retention` alone.
            best_fn=self._rank_value, best_mode=mode,
            todelete_subdir=_TRASH,
            # Not orbax's background cleanup: it can outlive a closed manager and
            # delete the same-named temporary directory of a newer save.
            cleanup_tmp_directories=False,
            enable_async_checkpointing=async_save,
            create=True,
        )
        self._remove_uncommitted()
        self._manager = ocp.CheckpointManager(self.directory, item_names=_ITEMS,
                                              options=options)
        self._empty_trash()

    # ----------------------------------------------------------------- saving

    def save(self, step: int, state: Any, extra: Mapping[str, Any] | None = None,
             metrics: Mapping[str, Any] | None = None) -> bool:
        """Saves `state` and `extra` at `step`; with `metrics` the step competes
        for the best-k. Returns False (and saves nothing) when `step` already exists
        and no metrics are given."""
        step = int(step)
        if step < 0:
            raise ValueError(f"step must be >= 0, got {step}")
        if metrics is not None:
            metrics = _clean_metrics(metrics)
            if self.metric not in metrics:
                raise ValueError(f"metrics must contain {self.metric!r}, got {sorted(metrics)}")
            if metrics[self.metric] is None:
                raise ValueError(f"metric {self.metric!r} must be finite to rank checkpoints")
        self._wait()
        if step in self._manager.all_steps():
            if metrics is None:
                return False
            raise ValueError(
                f"step {step} is already saved in {self.directory}; a step is saved once "
                "(save_eval before save_latest at an evaluation step)")
        extra = dict(extra or {})
        json.dumps(extra)  # fail here, with the caller's data, if not JSON-able
        data, typed = split_typed_keys(state)
        meta = {"format": _FORMAT_VERSION, "typed_keys": typed}
        saved = self._manager.save(
            step,
            args=ocp.args.Composite(state=ocp.args.StandardSave(data),
                                    extra=ocp.args.JsonSave(extra),
                                    meta=ocp.args.JsonSave(meta)),
            metrics=metrics, force=True)
        self._metrics_cache[step] = metrics
        if saved:
            self._unsummed.append(step)
        return saved

    def save_latest(self, step: int, state: Any,
                    extra: Mapping[str, Any] | None = None) -> bool:
        """Saves a resumable checkpoint that does not compete for the best-k."""
        return self.save(step, state, extra)

    def save_eval(self, step: int, state: Any, metrics: Mapping[str, Any],
                  extra: Mapping[str, Any] | None = None) -> bool:
        """Saves an evaluated checkpoint ranked by `metrics[self.metric]`."""
        return self.save(step, state, extra, metrics=metrics)

    # ---------------------------------------------------------------- queries

    def all_steps(self) -> tuple[int, ...]:
        return tuple(sorted(self._manager.all_steps()))

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def metrics(self, step: int) -> dict | None:
        """The evaluation metrics saved with `step`, or None for a latest-only step."""
        if step not in self._metrics_cache:
            self._metrics_cache[step] = self._manager.metrics(step)
        return self._metrics_cache[step]

    def best_step(self) -> int | None:
        """The kept evaluated step with the best metric (ties: the later step)."""
        ranked = [(self._rank_value(m), step) for step in self.all_steps()
                  if (m := self.metrics(step)) is not None]
        if not ranked:
            return None
        sign = 1.0 if self.mode == "max" else -1.0
        return max(ranked, key=lambda pair: (sign * pair[0], pair[1]))[1]

    def best_metric(self) -> float | None:
        step = self.best_step()
        return None if step is None else self._rank_value(self.metrics(step))

    def step_directory(self, step: int) -> pathlib.Path:
        """Where `step` lives on disk (to print, or to export from)."""
        return self.directory / str(step)

    # -------------------------------------------------------------- restoring

    def restore(self, which: Literal["latest", "best"] | int = "latest",
                target: Any = None) -> Restored:
        """Restores the latest step, the best step, or a given step number.

        target: a pytree like the saved state (concrete arrays or
          `jax.ShapeDtypeStruct`s, typed PRNG keys included); the result then has
          exactly its structure (optax NamedTuples and all), dtypes and shardings.
          Without it orbax returns the saved tree with plain dicts and lists.
        """
        self._wait()
        if which == "latest":
            step = self.latest_step()
        elif which == "best":
            step = self.best_step()
        elif isinstance(which, int) and not isinstance(which, bool):
            step = which if which in self._manager.all_steps() else None
        else:
            raise ValueError(f"which must be 'latest', 'best' or a step number, got {which!r}")
        if step is None:
            raise FileNotFoundError(f"no {which!r} checkpoint in {self.directory}")
        try:
            verify_manifest(self.step_directory(step))
        except ChecksumMismatch as e:
            raise CorruptCheckpoint(step, str(e)) from None
        try:
            meta = self._manager.restore(
                step, args=ocp.args.Composite(meta=ocp.args.JsonRestore())).meta
        except Exception as e:  # noqa: BLE001 -- orbax raises many kinds; one line
            raise self._unreadable(step, e) from None
        saved_typed = dict(meta.get("typed_keys", {}))
        if target is None:
            state_args = ocp.args.StandardRestore()
        else:
            abstract, target_typed = key_data_target(target)
            check_target_keys(saved_typed, target_typed)
            state_args = ocp.args.StandardRestore(abstract)
        try:
            restored = self._manager.restore(
                step, args=ocp.args.Composite(state=state_args, extra=ocp.args.JsonRestore()))
        except Exception as e:  # noqa: BLE001 -- a missing item, a shape that changed
            raise self._unreadable(step, e) from None
        state = wrap_typed_keys(restored.state, saved_typed)
        return Restored(step=step, state=state, extra=dict(restored.extra or {}))

    def restore_newest_whole(self, target: Any = None, say=print,
                             none_left: str = "no earlier checkpoint is left, starting over"
                             ) -> Restored | None:
        """The newest step whose files match their checksums (None: no step left).
        Each corrupt newer step is moved into `_corrupt/` (kept to look at; its step
        number can be saved again) and reported with `say`, one line each, ending in
        `none_left` when no step is left (the caller says what starts over). A step
        without checksums (the process stopped between its save and their writing)
        is restored unverified, saying so."""
        for step in sorted(self.all_steps(), reverse=True):
            try:
                restored = self.restore(step, target)
            except CorruptCheckpoint as e:
                moved = self._set_aside(step)
                left = self.all_steps()
                then = f"falling back to step {left[-1]}" if left else none_left
                say(f"{e}; moved it to {moved}; {then}")
                continue
            if not (self.step_directory(step) / MANIFEST).is_file():
                say(f"checkpoint {self.step_directory(step)} has no {MANIFEST} (the run "
                    "stopped before writing it): restored unverified")
            return restored
        return None

    # ------------------------------------------------------------- lifecycle

    def wait(self) -> None:
        """Blocks until every started save is committed (and old steps deleted)."""
        self._wait()

    def close(self) -> None:
        self._wait()
        self._manager.close()
        self._empty_trash()

    def __enter__(self) -> "CheckpointKeeper":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # --------------------------------------------------------------- private

    def _rank_value(self, metrics: Mapping[str, Any]) -> float:
        return float(metrics[self.metric])

    def _wait(self) -> None:
        """Waits for the save in flight, then writes the checksums of committed steps."""
        self._manager.wait_until_finished()
        self._empty_trash()
        if jax.process_index() == 0:  # one writer of the shared step directories
            for step in self._unsummed:
                if self.step_directory(step).is_dir():  # not deleted by retention since
                    write_manifest(self.step_directory(step))
        self._unsummed = []

    def _unreadable(self, step: int, error: Exception) -> CheckpointError:
        detail = " ".join(f"{type(error).__name__}: {error}".split())[:240]
        return CheckpointError(f"checkpoint {self.step_directory(step)} cannot be restored "
                          f"({detail}); move it out of {self.directory} to resume from an "
                          "earlier step, or start over with another --workdir")

    def _set_aside(self, step: int) -> pathlib.Path:
        """Moves step `step` out of the manager's sight into `_corrupt/` (one rename)."""
        aside = self.directory / _CORRUPT
        aside.mkdir(exist_ok=True)
        dest, n = aside / str(step), 1
        while dest.exists():
            dest, n = aside / f"{step}.{n}", n + 1
        os.replace(self.step_directory(step), dest)
        self._metrics_cache.pop(step, None)
        self._manager.reload()
        return dest

    def _remove_uncommitted(self) -> None:
        """Deletes step directories a killed process left uncommitted. Assumes one
        writer per directory: another live writer's save in progress looks the same."""
        if self.directory.is_dir():
            for entry in self.directory.iterdir():
                if _TMP_MARKER in entry.name:
                    shutil.rmtree(entry, ignore_errors=True)

    def _empty_trash(self) -> None:
        trash = self.directory / _TRASH
        if trash.is_dir():
            for entry in trash.iterdir():
                shutil.rmtree(entry, ignore_errors=True)
