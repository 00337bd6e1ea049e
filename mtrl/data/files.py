"""Reading local data files with errors that say what was expected where.

Every loader in mtrl.data takes a path to files the user already has (the project
never downloads data); a wrong path must fail at once and name both the path and
the file it was looking for.
"""

from __future__ import annotations

import gzip
import json
import os
import pathlib
from typing import Any, Iterator

PathLike = str | os.PathLike


def require_file(path: PathLike, what: str) -> pathlib.Path:
    """Returns `path` as a Path, or raises FileNotFoundError naming `what` was expected."""
    resolved = pathlib.Path(path).expanduser()
    if not resolved.is_file():
        state = "is a directory, not a file" if resolved.is_dir() else "does not exist"
        raise FileNotFoundError(f"{resolved} {state}; expected {what}")
    return resolved


def resolve_in_folder(path: PathLike, file_name: str, what: str) -> pathlib.Path:
    """`path` itself when it is a file, else `path/file_name`; must exist.

    Lets callers pass either the data folder (../shared/data/mbpp) or the file.
    """
    resolved = pathlib.Path(path).expanduser()
    if resolved.is_dir():
        resolved = resolved / file_name
    return require_file(resolved, what)


def read_jsonl(path: PathLike, what: str) -> Iterator[dict[str, Any]]:
    """Yields one dict per non-blank line of a .jsonl or .jsonl.gz file.

    Raises ValueError with the file name and line number on a malformed line.
    """
    resolved = require_file(path, what)
    opener = gzip.open if resolved.name.endswith(".gz") else open
    with opener(resolved, "rt", encoding="utf-8") as lines:
        for line_number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{resolved}:{line_number}: not valid JSON ({error})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{resolved}:{line_number}: expected a JSON object per line")
            yield record


def read_json_array(path: PathLike, what: str) -> list[dict[str, Any]]:
    """Reads a file holding one JSON array of objects."""
    resolved = require_file(path, what)
    with open(resolved, encoding="utf-8") as handle:
        records = json.load(handle)
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ValueError(f"{resolved}: expected a JSON array of objects ({what})")
    return records


def require_fields(record: dict[str, Any], fields: tuple[str, ...], where: str) -> None:
    """Raises ValueError naming the missing fields of one record."""
    missing = [field for field in fields if field not in record]
    if missing:
        raise ValueError(f"{where}: record is missing field(s) {missing}; has {sorted(record)}")


def normalize_newlines(text: str) -> str:
    """CRLF -> LF. MBPP's full set stores code with Windows line endings; Python reads
    both the same, but LF keeps prompts, diffs and cache keys uniform."""
    return text.replace("\r\n", "\n")
