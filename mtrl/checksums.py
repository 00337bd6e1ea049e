"""SHA-256 manifests of saved files, checked before the files are trusted.

Neither orbax nor safetensors checks what it reads: 64 overwritten bytes in a
checkpoint's array data restored silently, with changed weights. A directory that is
saved gets `checksums.sha256` beside its files, in `sha256sum` format (so
`sha256sum -c checksums.sha256` checks it by hand); a restore first recomputes every
listed file's digest and refuses the directory, in one line naming the file, when one
differs or is missing. Written last and atomically (temporary file, then rename):
a manifest that exists is complete.

A leaf module (standard library only): models/ and training/ both use it.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
from typing import Iterable

MANIFEST = "checksums.sha256"
_CHUNK = 1 << 20


class ChecksumMismatch(ValueError):
    """A file of a verified directory is missing or differs from its recorded digest;
    `path` is that file."""

    def __init__(self, message: str, path: pathlib.Path):
        super().__init__(message)
        self.path = path


def sha256_of(path: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def write_manifest(directory: str | os.PathLike,
                   files: Iterable[pathlib.Path] | None = None) -> pathlib.Path:
    """Records the digest of `files` (default: every file under `directory` but the
    manifest) in directory/checksums.sha256; returns the manifest's path."""
    root = pathlib.Path(directory)
    chosen = sorted(p for p in (root.rglob("*") if files is None else files)
                    if p.is_file() and p.name != MANIFEST
                    and not p.name.startswith(MANIFEST))
    lines = [f"{sha256_of(p)}  {p.relative_to(root).as_posix()}\n" for p in chosen]
    manifest = root / MANIFEST
    tmp = root / (MANIFEST + ".tmp")
    tmp.write_text("".join(lines))
    os.replace(tmp, manifest)
    return manifest


def verify_manifest(directory: str | os.PathLike) -> bool:
    """True when every file the manifest lists has its digest; False when there is no
    manifest (saved before checksums, or stopped before they were written); raises
    ChecksumMismatch naming the first file that is missing or differs."""
    root = pathlib.Path(directory)
    manifest = root / MANIFEST
    if not manifest.is_file():
        return False
    for number, line in enumerate(manifest.read_text().splitlines(), start=1):
        expected, _, name = line.partition("  ")
        if not name:
            raise ChecksumMismatch(f"{manifest} line {number} is not '<sha256>  <file>'",
                                   manifest)
        path = root / name
        if not path.is_file():
            raise ChecksumMismatch(f"{path} is missing (listed in {MANIFEST})", path)
        if sha256_of(path) != expected:
            raise ChecksumMismatch(f"{path} does not match its checksum in {MANIFEST} "
                                   "(the file is corrupt)", path)
    return True
