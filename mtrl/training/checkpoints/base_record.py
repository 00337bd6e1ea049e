"""The base a LoRA checkpoint's adapters belong to, named and verified.

A LoRA checkpoint (RL or SFT) holds the adapters and their optimizer state, not the base
weights: the run rebuilds the base from its config (a Hugging Face checkpoint, or a
preset initialised from the seed) and puts it back under the adapters. Adapters on any
other base compute something else, so every such checkpoint carries, in its host JSON,

    {"source": "hf:<checkpoint directory>" | "preset:<name>",
     "sha256": SHA-256 over every policy's base tensors (path, dtype, shape, bytes)}

and a restore compares it with the rebuilt base's, refusing in one line when they differ
(e.g. the checkpoint directory's weights were replaced since the run started).
"""

from __future__ import annotations

import hashlib
from typing import Any, Sequence

import jax
import numpy as np

EXTRA_KEY = "lora_base"  # the record's key in a checkpoint's host JSON


def base_digest(states: Sequence) -> str:
    """SHA-256 hex digest of the states' leaves in order: each leaf's path, dtype,
    shape and raw bytes (device arrays are read to the host one leaf at a time)."""
    digest = hashlib.sha256()
    for index, state in enumerate(states):
        for path, leaf in jax.tree_util.tree_flatten_with_path(state)[0]:
            array = np.asarray(jax.device_get(leaf))
            header = f"{index}/{jax.tree_util.keystr(path)}/{array.dtype.str}/{array.shape}"
            digest.update(header.encode())
            digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def base_record(states: Sequence, source: str) -> dict:
    """What a LoRA checkpoint says of its base: `source` and the digest of the states
    (one per policy, in order)."""
    if not isinstance(source, str) or not source:
        raise ValueError(f"source must name the base, got {source!r}")
    return {"source": source, "sha256": base_digest(states)}


def check_base(saved: dict | None, current: dict, where: str) -> None:
    """One-line ValueError unless the checkpoint at `where` (its record `saved`) was
    trained on the base `current` describes."""
    if saved is None:
        raise ValueError(f"{where} names no LoRA base (saved without adapters?); resume it "
                         "with its own config or use another --workdir")
    if saved.get("sha256") != current["sha256"]:
        raise ValueError(
            f"{where} holds adapters of the base {saved.get('source')} "
            f"(sha256 {str(saved.get('sha256'))[:12]}), but this run's base "
            f"{current['source']} is sha256 {current['sha256'][:12]}: the weights differ; "
            "restore the original base or use another --workdir")


def on_checked_base(state, extra: dict, base, record: dict | None, where) -> Any:
    """A restored `TrainState.checkpointed()` with its LoRA base put back after
    check_base (the checkpoint's host JSON `extra` against `record`); a full
    fine-tuning state (record None) as it is."""
    if record is None:
        return state
    check_base(extra.get(EXTRA_KEY), record, f"checkpoint {where}")
    return state.on_base(base)
