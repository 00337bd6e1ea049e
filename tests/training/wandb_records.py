"""Reads the records of a W&B run file (`run-<id>.wandb`), as `wandb sync` would:
a 7-byte header (":W&B", a magic number, a version), then LevelDB-log-style chunks
in 32 KiB blocks (crc32, length, type: 1 full, 2 first, 3 middle, 4 last), each
record a wandb_internal `Record` protobuf."""

import json
import pathlib
import struct

BLOCK = 32768
HEADER = 7


def records(path: pathlib.Path):
    from wandb.proto import wandb_internal_pb2

    data = pathlib.Path(path).read_bytes()
    assert data[:4] == b":W&B", data[:HEADER]
    pos, parts = HEADER, b""
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:  # a block's tail too short for a chunk header is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + HEADER])
        parts += data[pos + HEADER:pos + HEADER + length]
        pos += HEADER + length
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(parts)
            parts = b""
            yield record


def history_rows(path: pathlib.Path) -> list[dict]:
    """The logged rows, W&B's own `_`-keys dropped."""
    rows = []
    for record in records(path):
        if record.WhichOneof("record_type") == "history":
            row = {item.key or "/".join(item.nested_key): json.loads(item.value_json)
                   for item in record.history.item}
            rows.append({k: v for k, v in row.items() if not k.startswith("_")})
    return rows


def config_keys(path: pathlib.Path) -> set[str]:
    keys = set()
    for record in records(path):
        if record.WhichOneof("record_type") == "run":
            keys |= {item.key for item in record.run.config.update}
    return keys
