"""The candidate process: loads untrusted code and answers function calls.

Runs inside the isolated child (see isolation.py). It never sees a test: the
judge process sends it only "call function `name` with these plain-data
arguments" and receives only plain data back (codec.py). Everything in this
process is within the candidate's reach (it may patch this module, builtins, the
codec, write forged frames to the socket or exit at any moment); none of that can
make a test pass, because passing is decided in the judge from values alone, and
the judge never reveals expected values to this process.

Protocol on the socket (frames of JSON):
  -> {"syntax_error": [line, column, message]}          code does not compile
  -> {"load_error": [type, message]}                    top-level code raised
  -> {"names": {name: ["function"] | ["value", tree] | ["opaque", type]}}
  <- {"call": name, "args": tree, "kwargs": tree}
  -> {"r": tree, "m": [[position, tree], ...]}          return value, mutated args
  -> {"e": [type, message]}                             the call raised
  -> {"aux": name, "args": tree, "kwargs": tree, "id": n}  (two agents) call the helper
  <- {"aux": {"r": tree} | {"e": [type, message]}, "id": n}  its answer, relayed
"""

from __future__ import annotations

import builtins
import collections
import itertools
import json
import socket
import sys
import types
from typing import Any

from mtrl.envs.sandbox import codec

MESSAGE_CHARS = 2000
_MUTABLE = (list, dict, set, bytearray)


def _describe(error: BaseException) -> list[str]:
    try:
        message = str(error)[:MESSAGE_CHARS]
    except BaseException:  # a hostile __str__ must not stop the report
        message = "<unprintable>"
    return [type(error).__name__, message]


def _send(sock: socket.socket, message: Any) -> None:
    codec.send_frame(sock, json.dumps(message, ensure_ascii=False, allow_nan=True,
                                      separators=(",", ":")).encode("utf-8", "surrogatepass"))


def _flush_stdio() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def _export(namespace: dict[str, Any]) -> dict[str, list]:
    names: dict[str, list] = {}
    for name, value in list(namespace.items()):
        if name.startswith("__") or isinstance(value, types.ModuleType):
            continue
        try:
            if callable(value):
                names[name] = ["function"]
                continue
            names[name] = ["value", codec.to_plain(value)]
        except BaseException:
            names[name] = ["opaque", type(value).__name__]
    return names


def load(setup: str, code: str, extra: dict[str, Any] | None = None
         ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """Compiles and runs setup + code; returns (namespace, hello message).

    extra: names bound after setup and before the code (a helper's proxies).
    """
    try:
        compiled_setup = compile(setup, "<setup>", "exec", dont_inherit=True)
    except SyntaxError as error:
        return None, {"load_error": ["SetupError", f"setup does not compile: {error}"]}
    try:
        compiled = compile(code, "<candidate>", "exec", dont_inherit=True)
    except SyntaxError as error:
        return None, {"syntax_error": [error.lineno or 0, error.offset or 0,
                                       str(error.msg)[:MESSAGE_CHARS]]}
    except (ValueError, MemoryError, RecursionError) as error:  # NUL bytes, nesting
        return None, {"syntax_error": [0, 0, f"{type(error).__name__}: {error}"[:MESSAGE_CHARS]]}
    # Not "__main__": solutions often carry a main block that reads stdin.
    namespace: dict[str, Any] = {"__name__": "__candidate__", "__builtins__": builtins}
    try:
        exec(compiled_setup, namespace)
        namespace.update(extra or {})
        exec(compiled, namespace)
    except BaseException as error:  # SystemExit and KeyboardInterrupt included
        return None, {"load_error": _describe(error)}
    return namespace, {"names": _export(namespace)}


def _call(namespace: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    try:
        args = codec.from_plain(request["args"])
        kwargs = codec.from_plain(request["kwargs"])
        function = namespace[request["call"]]
        result = function(*args, **kwargs)
        reply: dict[str, Any] = {"r": codec.to_plain(result, opaque=True)}
        mutated = [[i, codec.to_plain(a, opaque=True)] for i, a in enumerate(args)
                   if isinstance(a, _MUTABLE)]
        mutated += [[k, codec.to_plain(a, opaque=True)] for k, a in kwargs.items()
                    if isinstance(a, _MUTABLE)]
        if mutated:
            reply["m"] = mutated
        return reply
    except BaseException as error:
        return {"e": _describe(error)}


def serve(sock: socket.socket, setup: str, code: str,
          extra: dict[str, Any] | None = None, inbox: "Inbox | None" = None) -> None:
    """Loads the candidate, says hello, then answers calls until the judge hangs up.

    Also the loop of a helper process, on its own socket to the judge."""
    inbox = inbox or Inbox(sock)
    codec.allow_long_ints()
    # The slot froze its heap (gc.freeze) before forking: those objects stay out of
    # collections here too, so a collection never copies the inherited pages.
    namespace, hello = load(setup, code, extra)
    _flush_stdio()
    inbox.send(hello)
    if namespace is None:
        return
    while True:
        try:
            request = inbox.next_call()
        except (EOFError, OSError, ValueError, codec.ProtocolError):
            return
        # One call per frame: the judge sends the next only after this answer.
        reply = _call(namespace, request) if type(request) is dict else {
            "e": ["ProtocolError", "not a call"]}
        _flush_stdio()
        try:
            inbox.send(reply)
        except (TypeError, ValueError, codec.NotPlainData) as error:
            inbox.send({"e": ["NotPlainData", str(error)[:MESSAGE_CHARS]]})


class Inbox:
    """Frames from the judge on the candidate's socket: calls for serve(), and (two
    agents) the judge's answers to the helper calls it relayed, each with the id
    of its call.

    One reader at a time: whichever thread needs a frame reads
    the socket while the others wait on the condition; each frame is filed, calls
    in order, answers under their id, so a thread that calls the helper gets its
    own answer whichever thread read it. Until a helper link exists (one agent)
    there are no threads to serve and no lock is taken."""

    def __init__(self, sock: socket.socket):
        self.sock, self.calls = sock, collections.deque()
        self.answers: dict[Any, Any] = {}
        self.condition: Any = None  # a threading.Condition once a HelperLink exists
        self.send_lock: Any = None
        self.reading = False
        self.broken: BaseException | None = None

    def share(self) -> None:
        """From now on several threads may send and wait (a helper link exists)."""
        if self.condition is None:
            import threading  # only two-agent programs pay for it

            self.condition, self.send_lock = threading.Condition(), threading.Lock()

    def send(self, message: Any) -> None:
        if self.send_lock is None:
            _send(self.sock, message)
        else:
            with self.send_lock:
                _send(self.sock, message)

    def next_call(self) -> Any:
        self._wait(lambda: bool(self.calls))
        return self.calls.popleft()

    def answer(self, call_id: int) -> Any:
        self._wait(lambda: call_id in self.answers)
        return self.answers.pop(call_id)

    def _file(self, message: Any) -> None:
        if type(message) is dict and "aux" in message:
            self.answers[message.get("id")] = message["aux"]
        else:
            self.calls.append(message)

    def _read(self) -> Any:
        return json.loads(codec.recv_frame(self.sock))

    def _wait(self, ready) -> None:
        if self.condition is None:
            while not ready():
                self._file(self._read())
            return
        with self.condition:
            while not ready():
                if self.broken is not None:
                    raise self.broken
                if self.reading:
                    self.condition.wait()
                    continue
                self.reading = True
                self.condition.release()
                try:
                    message = self._read()
                except BaseException as error:  # every waiter learns the socket is gone
                    message, self.broken = None, error
                finally:
                    self.condition.acquire()
                    self.reading = False
                    self.condition.notify_all()
                if self.broken is None:
                    self._file(message)


class HelperLink:
    """The main candidate's way to its helper process (Program.helper_code): each
    call goes to the judge as {"aux": name, ..., "id": n}; the judge relays it to
    the helper on the helper's own socket, counts it, and answers {"aux": reply,
    "id": n}. Safe to use from several threads at once."""

    def __init__(self, sock: socket.socket, inbox: Inbox):
        self.sock, self.inbox = sock, inbox
        self.ids = itertools.count()  # next() is atomic under the GIL
        inbox.share()

    def call(self, name: str, args: tuple, kwargs: dict) -> Any:
        call_id = next(self.ids)
        self.inbox.send({"aux": name, "args": codec.to_plain(args),
                         "kwargs": codec.to_plain(kwargs), "id": call_id})
        reply = self._receive(call_id)
        if "e" in reply:
            type_name, message = (list(reply["e"]) + ["", ""])[:2]
            error = getattr(builtins, str(type_name), None)
            if isinstance(error, type) and issubclass(error, Exception):
                try:
                    raise error(str(message))
                except TypeError:
                    pass
            raise RuntimeError(f"{type_name}: {message}")
        return codec.from_plain(reply.get("r"))

    def _receive(self, call_id: int) -> dict[str, Any]:
        try:
            message = self.inbox.answer(call_id)
        except (EOFError, OSError, ValueError, codec.ProtocolError) as error:
            raise RuntimeError(f"the judge ended ({type(error).__name__})") from None
        return message if type(message) is dict else {}


class HelperFunction:
    """Stands for the helper's function `name` in the main candidate's namespace."""

    def __init__(self, link: HelperLink, name: str):
        self._link, self.__name__ = link, name

    def __call__(self, *args, **kwargs):
        return self._link.call(self.__name__, args, kwargs)

    def __repr__(self) -> str:
        return f"<helper function {self.__name__}>"
