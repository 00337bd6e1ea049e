"""Plain-data codec for values crossing from the candidate process to the judge.

The candidate process is untrusted, so nothing it sends may carry behaviour: a
value crosses as JSON text and is rebuilt on the judge's side from builtin types
only. An object whose `__eq__` always holds, a lying subclass of `int`, a proxy
that patches comparison: none of these survive the trip, because the judge only
ever sees the numbers, strings and containers the candidate's object converted to.

Encoding (JSON, tagged): None, bool, int, float (NaN/Infinity allowed) and str map
to themselves; lists map to JSON arrays; every other type is a one-key object
`{"$tag": payload}`:

    $tuple, $set, $frozenset, $iter : [items]      ($iter: a materialized iterator)
    $dict : [[key, value], ...]     (keys of any plain type)
    $bytes, $bytearray : hex        $complex : [real, imag]
    $range : [start, stop, step]    $fraction : [numerator, denominator]
    $decimal : str                  $ndarray : [dtype, shape, nested list]
    $npscalar : [dtype, value]      (numpy, rebuilt only when numpy imports)
    $opaque : [type name, truth value or null, repr]   (see below)

Values of other types (a re.Match, a class instance) cross, when the candidate
side allows it (`opaque=True`, used for return values), as an `Opaque`: its type
name, its truth value and its repr, all computed in the candidate. In the judge it
is truthy or falsy accordingly and equal only to itself, so `assert f(s)` on a
returned Match works while an object whose __eq__ always holds compares unequal
to everything.

Conversion on the candidate's side (`encode`) is lenient: subclasses of builtins
are read through the builtin's own methods and numpy values through `tolist`.
That leniency is safe: whatever the conversion produces is plain data, i.e. the
candidate's answer. The judge's side (`decode`) is strict: unknown tags, plain
JSON objects, too deep nesting or oversized frames are errors.

Frames on a stream socket are a 4-byte big-endian length plus the payload.
"""

from __future__ import annotations

import decimal
import fractions
import json
import operator
import os
import socket
import struct
import sys
from typing import Any

MAX_FRAME_BYTES = 32 << 20  # one value; bigger answers are an error, not a hang
MAX_DEPTH = 200
MAX_INT_DIGITS = 100_000
# The judge decodes what a candidate sends within the candidate's own memory limit
# (a hostile frame must not grow the judge): JSON text grows up to ~25x as Python
# objects, and rebuilding copies it once more, so a frame holds at most 1/64 of the
# limit; and a decoded value, ranges included (a test may materialize one:
# set(range(n)) in C code, out of the per-test alarm's reach), holds at most one item
# per 128 bytes of it.
FRAME_SHARE = 64
BYTES_PER_ITEM = 128

_HEADER = struct.Struct(">I")
HEADER = _HEADER  # 4-byte big-endian length before every frame
_SCALARS = (type(None), bool, int, float, str)


def frame_limit(memory_bytes: int) -> int:
    """The largest frame the judge reads from a candidate with this memory limit."""
    return min(MAX_FRAME_BYTES, max(1 << 16, memory_bytes // FRAME_SHARE))


def item_budget(memory_bytes: int) -> int:
    """How many items one decoded value may hold for a candidate with this limit."""
    return max(1 << 10, memory_bytes // BYTES_PER_ITEM)


class Budget:
    """Items a decoding may still build (from_plain); None: no bound."""

    __slots__ = ("items",)

    def __init__(self, items: int):
        self.items = items

    def take(self, count: int) -> None:
        self.items -= count
        if self.items < 0:
            raise ProtocolError("the value holds more items than the candidate's memory "
                                "limit allows the judge to build")


class NotPlainData(TypeError):
    """The value cannot cross the sandbox boundary as plain data."""


class ProtocolError(RuntimeError):
    """A frame was malformed, truncated or too large."""


def _iterate(value: Any, base: type) -> list:
    # Read a builtin subclass through the builtin's own iterator so an overridden
    # __iter__ cannot change what is sent; the items themselves are converted too.
    return list(base.__iter__(value))


class Opaque:
    """A candidate value that is not plain data, as the judge sees it."""

    __slots__ = ("type_name", "truthy", "text")

    def __init__(self, type_name: str, truthy: bool | None, text: str):
        self.type_name, self.truthy, self.text = type_name, truthy, text

    def __bool__(self) -> bool:
        if self.truthy is None:
            raise TypeError(f"the truth value of the candidate's {self.type_name} is unknown")
        return self.truthy

    def __repr__(self) -> str:
        return self.text


def _opaque(value: Any) -> dict[str, list]:
    try:
        truthy: bool | None = bool(value)
    except Exception:
        truthy = None
    try:
        text = str(repr(value))[:200]
    except Exception:
        text = f"<{type(value).__name__}>"
    return {"$opaque": [type(value).__name__, truthy, text]}


def to_plain(value: Any, depth: int = 0, opaque: bool = False) -> Any:
    """Converts `value` to the tagged JSON-ready structure (candidate side).

    opaque: values of other types become Opaque records instead of an error.
    """
    if depth > MAX_DEPTH:
        raise NotPlainData(f"value nested deeper than {MAX_DEPTH} levels")
    kind = type(value)
    if kind in _SCALARS:
        return value
    if getattr(kind, "__module__", "") == "numpy":  # before float: np.float64 subclasses it
        return _numpy_to_plain(value, depth)
    if isinstance(value, bool):  # bool cannot be subclassed; kept for clarity
        return bool(value)
    if isinstance(value, int):
        return int.__index__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__str__(value)
    nxt = depth + 1
    if isinstance(value, list):
        return [to_plain(item, nxt, opaque) for item in _iterate(value, list)]
    if isinstance(value, tuple):
        return {"$tuple": [to_plain(item, nxt, opaque) for item in _iterate(value, tuple)]}
    if isinstance(value, dict):
        return {"$dict": [[to_plain(k, nxt, opaque),
                           to_plain(dict.__getitem__(value, k), nxt, opaque)]
                          for k in _iterate(value, dict)]}
    if isinstance(value, frozenset):
        return {"$frozenset": [to_plain(item, nxt, opaque)
                               for item in _iterate(value, frozenset)]}
    if isinstance(value, set):
        return {"$set": [to_plain(item, nxt, opaque) for item in _iterate(value, set)]}
    if isinstance(value, complex):
        return {"$complex": [complex.__getattribute__(value, "real"),
                             complex.__getattribute__(value, "imag")]}
    if isinstance(value, bytearray):
        return {"$bytearray": bytes(value).hex()}
    if isinstance(value, bytes):
        return {"$bytes": bytes.hex(value)}
    if isinstance(value, range):
        return {"$range": [value.start, value.stop, value.step]}
    if isinstance(value, fractions.Fraction):
        return {"$fraction": [operator.index(value.numerator),
                              operator.index(value.denominator)]}
    if isinstance(value, decimal.Decimal):
        return {"$decimal": str(decimal.Decimal.__str__(value))}
    if hasattr(kind, "__next__") and hasattr(kind, "__iter__"):
        # Generators, map/filter/zip objects: the judge gets the items it would
        # have iterated over (an infinite iterator runs into the time limit).
        return {"$iter": [to_plain(item, nxt, opaque) for item in value]}
    if opaque:
        return _opaque(value)
    raise NotPlainData(f"a value of type {kind.__name__} is not plain data")


def _numpy_to_plain(value: Any, depth: int) -> Any:
    dtype = getattr(value, "dtype", None)
    if dtype is None or dtype.kind in "OV":
        raise NotPlainData(f"numpy value of type {type(value).__name__} is not plain data")
    if type(value).__name__ == "ndarray":
        return {"$ndarray": [dtype.str, list(value.shape), to_plain(value.tolist(), depth + 1)]}
    return {"$npscalar": [dtype.str, to_plain(value.item(), depth + 1)]}


def encode(value: Any) -> bytes:
    """Serializes `value` as plain data; raises NotPlainData otherwise."""
    try:
        text = json.dumps(to_plain(value), ensure_ascii=False, allow_nan=True,
                          separators=(",", ":"))
    except (ValueError, RecursionError) as error:  # huge ints, cycles
        raise NotPlainData(str(error)) from None
    return text.encode("utf-8", "surrogatepass")


def from_plain(node: Any, depth: int = 0, budget: Budget | None = None) -> Any:
    """Rebuilds a value from its tagged tree using builtin types only (judge side).

    budget: items the value may hold (lists, tuples, sets, dicts, iterators and
    the length of ranges), else ProtocolError; None for no bound."""
    if depth > MAX_DEPTH:
        raise ProtocolError(f"value nested deeper than {MAX_DEPTH} levels")
    if type(node) in _SCALARS:
        return node
    nxt = depth + 1
    if type(node) is list:
        if budget is not None:
            budget.take(len(node))
        return [from_plain(item, nxt, budget) for item in node]
    if type(node) is not dict or len(node) != 1:
        raise ProtocolError("untagged JSON object in a plain-data frame")
    (tag, payload), = node.items()
    if budget is not None:
        if type(payload) is list and tag not in ("$range", "$complex", "$fraction"):
            budget.take(len(payload))
        elif tag == "$range":
            budget.take(len(range(*_numbers(payload, 3, (int,)))))
    return _tagged(tag, payload, nxt, budget)


def _tagged(tag: str, payload: Any, nxt: int, budget: Budget | None) -> Any:
    if tag == "$tuple":
        return tuple(from_plain(item, nxt, budget) for item in _as_list(payload))
    if tag == "$iter":
        return iter([from_plain(item, nxt, budget) for item in _as_list(payload)])
    if tag == "$set":
        return {from_plain(item, nxt, budget) for item in _as_list(payload)}
    if tag == "$frozenset":
        return frozenset(from_plain(item, nxt, budget) for item in _as_list(payload))
    if tag == "$dict":
        pairs = _as_list(payload)
        if not all(type(pair) is list and len(pair) == 2 for pair in pairs):
            raise ProtocolError("malformed $dict payload")
        return {from_plain(k, nxt, budget): from_plain(v, nxt, budget) for k, v in pairs}
    if tag in ("$bytes", "$bytearray"):
        if type(payload) is not str:
            raise ProtocolError(f"malformed {tag} payload")
        data = bytes.fromhex(payload)
        return data if tag == "$bytes" else bytearray(data)
    if tag == "$complex":
        real, imag = _numbers(payload, 2, (int, float))
        return complex(real, imag)
    if tag == "$range":
        return range(*_numbers(payload, 3, (int,)))
    if tag == "$fraction":
        return fractions.Fraction(*_numbers(payload, 2, (int,)))
    if tag == "$decimal":
        if type(payload) is not str:
            raise ProtocolError("malformed $decimal payload")
        return decimal.Decimal(payload)
    if tag in ("$ndarray", "$npscalar"):
        return _numpy_from_plain(tag, payload, nxt, budget)
    if tag == "$opaque":
        if type(payload) is not list or len(payload) != 3 or type(payload[2]) is not str or (
                payload[1] is not None and type(payload[1]) is not bool):
            raise ProtocolError("malformed $opaque payload")
        return Opaque(str(payload[0]), payload[1], payload[2])
    raise ProtocolError(f"unknown tag {tag!r}")


def _as_list(payload: Any) -> list:
    if type(payload) is not list:
        raise ProtocolError("malformed container payload")
    return payload


def _numbers(payload: Any, count: int, kinds: tuple[type, ...]) -> list:
    if type(payload) is not list or len(payload) != count or not all(
            type(x) in kinds for x in payload):
        raise ProtocolError(f"expected {count} numbers, got {payload!r:.80}")
    return payload


def _numpy_from_plain(tag: str, payload: Any, depth: int, budget: Budget | None) -> Any:
    try:
        import numpy  # the judge only needs numpy when a candidate returns numpy values
    except ImportError:
        raise ProtocolError("numpy value received but numpy is not importable") from None
    if tag == "$npscalar":
        dtype, item = _as_list(payload)
        return numpy.dtype(str(dtype)).type(from_plain(item, depth, budget))
    dtype, shape, items = _as_list(payload)
    return numpy.array(from_plain(items, depth, budget), dtype=numpy.dtype(str(dtype))).reshape(
        [int(n) for n in _as_list(shape)])


def decode(data: bytes) -> Any:
    """Rebuilds a value from `encode`'s bytes using builtin types only (judge side)."""
    try:
        tree = json.loads(data.decode("utf-8", "surrogatepass"))
        return from_plain(tree, 0)
    except ProtocolError:
        raise
    except (ValueError, TypeError, RecursionError, MemoryError, OverflowError) as error:
        raise ProtocolError(f"malformed plain-data frame: {error}") from None


def allow_long_ints() -> None:
    """Raises the int<->str digit limit so big integer answers still cross."""
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(MAX_INT_DIGITS)


# --- framing -------------------------------------------------------------------


def send_frame(sock: socket.socket, payload: bytes) -> None:
    if len(payload) > MAX_FRAME_BYTES:
        raise NotPlainData(f"value of {len(payload)} bytes exceeds {MAX_FRAME_BYTES}")
    sock.sendall(_HEADER.pack(len(payload)) + payload)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise EOFError("peer closed the connection")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def recv_frame(sock: socket.socket) -> bytes:
    (size,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if size > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {size} bytes exceeds {MAX_FRAME_BYTES}")
    return _recv_exact(sock, size)


def write_fd_frame(fd: int, message: Any) -> None:
    """A control message as one frame on a pipe (blocking, written whole)."""
    payload = json.dumps(message, separators=(",", ":")).encode("utf-8", "surrogatepass")
    data = memoryview(_HEADER.pack(len(payload)) + payload)
    while data:
        data = data[os.write(fd, data):]


def read_exact_fd(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError("pipe closed")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_fd_frame(fd: int) -> Any:
    (size,) = _HEADER.unpack(read_exact_fd(fd, _HEADER.size))
    return json.loads(read_exact_fd(fd, size))
