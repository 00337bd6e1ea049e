"""The candidate as the judge sees it: the link and slot the judge talks through, how
a candidate's end and its exceptions reach the judge, the stand-ins bound for the
candidate's names, and the wire form of one call. Why verdicts stay honest across
this boundary: judge.py's docstring.
"""

from __future__ import annotations

import builtins
import json
from typing import Any, Protocol

from mtrl.envs.sandbox import codec


class Caller(Protocol):
    """What a RemoteFunction needs of the judge (judge.Judge): one relayed call."""

    def call(self, name: str, args: tuple, kwargs: dict) -> Any: ...

_CONTROL_FLOW = (StopIteration, StopAsyncIteration)


class CandidateGone(Exception):
    """The candidate process ended or stopped answering."""

    def __init__(self, status: str, error_type: str, message: str, infra: bool = False):
        super().__init__(message)
        self.status, self.error_type = status, error_type
        self.infra = infra  # the slot says the sandbox, not the program, caused it


class CandidateError(Exception):
    """An exception raised by the candidate whose type is not a builtin exception."""


class CandidateLink(Protocol):
    """A connection to one candidate process and its helper (judge_main.CandidateLink)."""

    helper_hello: Any

    def send(self, payload: bytes, helper: bool = False) -> None: ...
    def receive(self, helper: bool = False) -> bytes: ...
    def close(self) -> None: ...


class Slot(Protocol):
    """What the judge may ask of its slot (judge_main.SlotLink)."""

    def reap(self, expect_dead: bool) -> list[str]: ...
    def spawn(self) -> CandidateLink: ...


class RemoteValueUnavailable:
    """Stands for a candidate global that is not plain data (class, instance...)."""

    def __init__(self, name: str, type_name: str):
        self._message = f"{name!r} (a {type_name}) cannot cross the sandbox boundary"

    def _refuse(self, *args, **kwargs):
        raise TypeError(self._message)

    __call__ = __getattr__ = __eq__ = __iter__ = __len__ = __bool__ = _refuse
    __hash__ = None  # type: ignore[assignment]


class RemoteFunction:
    """A callable standing for the candidate's function `name`."""

    def __init__(self, judge: Caller, name: str):
        self._judge, self.__name__ = judge, name

    def __call__(self, *args, **kwargs):
        return self._judge.call(self.__name__, args, kwargs)

    def __repr__(self) -> str:
        return f"<candidate function {self.__name__}>"


def remote_exception(type_name: str, message: str) -> BaseException:
    """The judge's own exception for one the candidate raised: the builtin type of that
    name, or a CandidateError; `mtrl_error_type` keeps the candidate's type name."""
    cls = getattr(builtins, type_name, None)
    error: BaseException
    # Iteration-protocol signals would steer the judge's own control flow (a
    # StopIteration inside `all(map(candidate, xs))` ends the map: vacuous pass).
    if isinstance(cls, type) and issubclass(cls, Exception) and not issubclass(
            cls, _CONTROL_FLOW):
        try:
            error = cls(message)
        except Exception:  # e.g. UnicodeDecodeError wants five arguments
            error = CandidateError(f"{type_name}: {message}")
    else:  # custom exceptions, and SystemExit / KeyboardInterrupt made harmless
        error = CandidateError(message)
    error.mtrl_error_type = type_name  # type: ignore[attr-defined]
    return error


def copy_back(original: Any, value: Any) -> None:
    """Copies a candidate's in-place change of an argument into the judge's object."""
    if isinstance(original, (list, bytearray)) and isinstance(value, type(original)):
        original[:] = value
    elif isinstance(original, (dict, set)) and isinstance(value, type(original)):
        original.clear()
        original.update(value)


def request_text(name: str, args: tuple, kwargs: dict) -> str:
    """The wire form of one call; equal texts are the very same call."""
    try:
        return json.dumps({"call": name, "args": codec.to_plain(list(args)),
                           "kwargs": codec.to_plain(dict(kwargs))},
                          ensure_ascii=False, allow_nan=True, separators=(",", ":"))
    except codec.NotPlainData as error:
        raise TypeError(f"an argument of {name}() cannot be sent to the candidate: "
                        f"{error}") from None
