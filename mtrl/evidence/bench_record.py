"""One record format for every benchmark: the program's results and the machine stamp
in one JSON object.

    stamp = machine_stamp()                 # stamp.py, when the measurement starts
    write_record(args.out, result, stamp)   # {**result, "stamp": {...stamp, load_after, format}}
    result, stamp = read_record(path)       # stamp None for a record made before stamps

A record is a JSON object: the program's own keys (its config, command, arms, table)
and one reserved key, "stamp" (stamp.py's keys plus "format": FORMAT). A program may
write its record more than once (after each part, so that a stopped run keeps what
finished); each write reads the load again for load_after.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any, Mapping

from mtrl.evidence.stamp import finished

FORMAT = "mtrl-bench-1"
STAMP = "stamp"


def bench_record(results: Mapping[str, Any], stamp: Mapping[str, Any]) -> dict[str, Any]:
    """{**results, "stamp": stamp finished now, with the format}."""
    if STAMP in results:
        raise ValueError(f"results may not hold the reserved key {STAMP!r}")
    return {**results, STAMP: {**finished(stamp), "format": FORMAT}}


def write_record(path: str | pathlib.Path, results: Mapping[str, Any],
                 stamp: Mapping[str, Any], indent: int = 2) -> dict[str, Any]:
    """Writes bench_record(results, stamp) as JSON to `path` (its folder made if needed);
    returns the record."""
    record = bench_record(results, stamp)
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=indent))
    return record


def read_record(path: str | pathlib.Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(results, stamp) of a record; stamp is None for a record written before stamps
    (its load keys, if any, stay among the results)."""
    record = json.loads(pathlib.Path(path).read_text())
    if not isinstance(record, dict):
        raise ValueError(f"{path}: a benchmark record is a JSON object, got "
                         f"{type(record).__name__}")
    stamp = record.pop(STAMP, None)
    return record, stamp
