"""Sample multi-turn transcripts written as text at each evaluation.

`workdir/transcripts/<split>_step<step, 8 digits>.txt` holds the transcripts of one
evaluation, each under a header line, so `ls` sorts them by step and a diff of two
files shows how the policy's answers changed.
"""

from __future__ import annotations

import os
import pathlib
from typing import Sequence

TRANSCRIPTS_DIR = "transcripts"


def write_transcripts(workdir: str | os.PathLike, step: int, transcripts: Sequence[str],
                      *, split: str = "heldout") -> pathlib.Path:
    """Writes `transcripts` (one string per episode, all turns) for `step`; returns
    the file. Written to a temporary name and renamed, so readers never see half."""
    if isinstance(step, bool) or int(step) != step or step < 0:
        raise ValueError(f"step must be a non-negative integer, got {step!r}")
    if not split.isidentifier():
        raise ValueError(f"split must be a plain name, got {split!r}")
    if isinstance(transcripts, str):
        raise TypeError("transcripts must be a sequence of strings, not one string")
    folder = pathlib.Path(workdir) / TRANSCRIPTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    count = len(transcripts)
    blocks = [f"# {split} transcripts at step {int(step)}: {count}\n"]
    for index, text in enumerate(transcripts, 1):
        if not isinstance(text, str):
            raise TypeError(f"transcript {index} is {type(text).__name__}, not str")
        body = text if text.endswith("\n") else text + "\n"
        blocks.append(f"\n======== transcript {index}/{count} ========\n{body}")
    path = folder / f"{split}_step{int(step):08d}.txt"
    partial = path.with_suffix(".txt.tmp")
    partial.write_text("".join(blocks), encoding="utf-8")
    os.replace(partial, path)
    return path
