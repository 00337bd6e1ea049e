"""SHA-256 manifests of saved files, checked before the files are trusted.

Neither orbax nor safetensors checks what it reads: 64 overwritten bytes in a
checkpoint's array data restored silently, with changed weights. A directory that is
saved gets `checksums.sha256` beside its files, in `sha256sum` format (so
`sha256sum -c checksums.sha256` checks it by hand); a restore first recomputes every
listed file's digest and refuses the directory, in one line naming the file, when one
differs or is missing. Written last and atomically (temporary file, then rename):
a manifest that exists is complete.

The manifest guards itself too: `checksums.sha256.sha256` holds its digest (checked
by hand with `sha256sum -c checksums.sha256.sha256`). Without it, damage inside the
manifest would blame an innocent or phantom file; with it, the refusal names the
manifest. A manifest without that file (saved before it existed, or stopped between
the two renames) is still checked file by file.

A leaf module (standard library only): models/ and training/ both use it.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
from typing import Iterable

MANIFEST = "checksums.sha256"
MANIFEST_DIGEST = MANIFEST + ".sha256"
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
    manifest, its guard and their temporary files, all named checksums.sha256*) in
    directory/checksums.sha256, then the manifest's digest in its guard; returns the
    manifest's path."""
    root = pathlib.Path(directory)
    chosen = sorted(p for p in (root.rglob("*") if files is None else files)
                    if p.is_file() and not p.name.startswith(MANIFEST))
    lines = [f"{sha256_of(p)}  {p.relative_to(root).as_posix()}\n" for p in chosen]
    manifest, guard = root / MANIFEST, root / MANIFEST_DIGEST
    tmp, guard_tmp = root / (MANIFEST + ".tmp"), root / (MANIFEST_DIGEST + ".tmp")
    tmp.write_text("".join(lines))
    guard_tmp.write_text(f"{sha256_of(tmp)}  {MANIFEST}\n")
    guard.unlink(missing_ok=True)  # an old guard must never judge the new manifest
    os.replace(tmp, manifest)
    os.replace(guard_tmp, guard)
    return manifest


def verify_manifest(directory: str | os.PathLike) -> bool:
    """True when every file the manifest lists has its digest; False when there is no
    manifest (saved before checksums, or stopped before they were written); raises
    ChecksumMismatch naming the first file that is missing or differs."""
    root = pathlib.Path(directory)
    manifest = root / MANIFEST
    if not manifest.is_file():
        return False
    _verify_manifest_itself(root)
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


def _verify_manifest_itself(root: pathlib.Path) -> None:
    """Raises ChecksumMismatch naming the manifest when its guard file records another
    digest; a manifest without a guard passes (see the module docstring)."""
    guard = root / MANIFEST_DIGEST
    if not guard.is_file():
        return
    expected, _, name = guard.read_text().strip().partition("  ")
    manifest = root / MANIFEST
    if name != MANIFEST or sha256_of(manifest) != expected:
        raise ChecksumMismatch(f"{manifest} does not match its checksum in "
                               f"{MANIFEST_DIGEST} (the manifest is corrupt)", manifest)
