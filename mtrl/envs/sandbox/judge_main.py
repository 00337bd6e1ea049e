"""The judge process of a slot: a long-lived loop that judges one program after another.

Forked by the slot once (and again only if it dies or is killed at a program's
wall-clock limit), before the slot has seen any test, then switched to its own
uid and made non-dumpable. Per program:

  slot  -> judge : {"op": "start", "id", "limits"}; the candidate that runs this
                   program was armed earlier ({"op": "arm"} + its socket and the
                   read ends of its stdout/stderr pipes, passed as fds)
  pool  -> judge : the tests (tests pipe, never read by the slot); frames with an
                   older program id are leftovers of an aborted program: skipped
  judge -> pool  : {"ack"}, one {"i", "s", "t", "m"} per test (each one atomic
                   write), {"syntax"} when the code does not compile, and last
                   {"done", "stdout", "stderr", "wall_s"}
  judge -> slot  : "reap" / "spawn" while it runs, "done" at the end

The judge drains the candidate's stdout/stderr (capped) whenever it waits for an
answer, so a chatty candidate never blocks on a full pipe. Compiled tests and
their static calls are cached by source: RL evaluates the same tests many times.
"""

from __future__ import annotations

import ast
import builtins
import collections
import json
import os
import select
import socket
import struct
import time
from typing import Any

from mtrl.envs.sandbox import codec, judge, judge_run, prefetch
from mtrl.envs.sandbox.types import Limits

RESULT_FRAME_LIMIT = 4000  # < PIPE_BUF (4096): a verdict frame is one atomic write
# Candidate-controlled text in a verdict frame (error type, message), capped by
# characters before encoding; a message is shortened further if its escaped form
# (up to 12 bytes a character) would not fit the frame.
MESSAGE_CHARS = 1500
TYPE_CHARS = 200
CACHE_ENTRIES = 512
_HEADER = struct.Struct(">I")


class OutputCapture:
    """The first `limit` bytes of a program's stdout and stderr (all its candidates)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.streams = {"stdout": bytearray(), "stderr": bytearray()}

    def add(self, name: str, chunk: bytes) -> None:
        buffer = self.streams[name]
        if len(buffer) < self.limit:
            buffer += chunk[:self.limit - len(buffer)]

    def text(self, name: str) -> str:
        return bytes(self.streams[name]).decode("utf-8", "replace")


class CandidateLink:
    """Sockets to one candidate process and to its helper (two agents: the judge
    relays main's calls of the helper, judge.Judge.relay), plus the read ends of
    their output pipes.

    Unread data is bounded per socket: while the judge waits on one socket it
    reads the other too (so neither process blocks on a full socket), but holds at
    most one frame's worth (`capacity`: a header and `frame_limit` bytes) of it;
    a socket with more waiting than that has broken the protocol, which every
    later receive reports. (Unbounded, a flood of the socket not waited on grew
    the judge by gigabytes, and its own MemoryError made a "sandbox failure".)"""

    def __init__(self, fds: list[int], capture: OutputCapture,
                 frame_limit: int = codec.MAX_FRAME_BYTES):
        sock_fd, helper_fd, out_fd, err_fd = fds
        self.sock = socket.socket(fileno=sock_fd)
        self.helper = socket.socket(fileno=helper_fd)
        self.outputs = {out_fd: "stdout", err_fd: "stderr"}
        for fd in self.outputs:
            os.set_blocking(fd, False)
        self.capture, self.frame_limit = capture, frame_limit
        self.capacity = _HEADER.size + frame_limit
        self.buffers = {sock_fd: bytearray(), helper_fd: bytearray()}
        self.broken = ""  # why a socket broke the protocol; then every receive fails
        self.poller = select.poll()
        for fd in (sock_fd, helper_fd, out_fd, err_fd):
            self.poller.register(fd, select.POLLIN)
        self.helper_hello: Any = None  # read on the first relayed call

    def send(self, payload: bytes, helper: bool = False) -> None:
        (self.helper if helper else self.sock).sendall(_HEADER.pack(len(payload)) + payload)

    def _frame(self, buffer: bytearray) -> bytes | None:
        if len(buffer) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack(buffer[:_HEADER.size])
        if size > self.frame_limit:  # the candidate's share (codec.frame_limit)
            raise codec.ProtocolError(f"frame of {size} bytes exceeds {self.frame_limit}")
        if len(buffer) < _HEADER.size + size:
            return None
        frame = bytes(buffer[_HEADER.size:_HEADER.size + size])
        del buffer[:_HEADER.size + size]
        return frame

    def receive(self, helper: bool = False) -> bytes:
        """The next frame from the candidate (or its helper); output is drained
        meanwhile, and frames from the other socket wait in its buffer (at most
        `capacity` bytes; more is a ProtocolError, now and on every later call)."""
        wanted = (self.helper if helper else self.sock).fileno()
        while True:
            if self.broken:
                raise codec.ProtocolError(self.broken)
            frame = self._frame(self.buffers[wanted])
            if frame is not None:
                return frame
            for fd, _ in self.poller.poll():
                if fd in self.outputs:
                    self.drain(fd)
                    continue
                buffer = self.buffers[fd]
                # A complete frame of the wanted socket is taken before it can
                # reach `capacity` (_frame): only the other socket ever fills up.
                room = self.capacity - len(buffer)
                chunk = os.read(fd, min(room, 1 << 20)) if room > 0 else self._peek(fd)
                if not chunk:
                    if fd == wanted:
                        raise EOFError("the candidate closed its socket")
                    self.poller.unregister(fd)
                    continue
                if room <= 0:
                    self.broken = (f"the candidate sent more than {self.capacity} bytes the "
                                   "judge had not asked for")
                    break
                buffer += chunk

    def _peek(self, fd: int) -> bytes:
        """One byte of what waits on a full socket's queue, left there (b"": it
        was closed, which is no overflow)."""
        sock = self.sock if fd == self.sock.fileno() else self.helper
        return sock.recv(1, socket.MSG_PEEK)

    def drain(self, fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except (BlockingIOError, OSError):
                return
            if not chunk:
                self.poller.unregister(fd)
                del self.outputs[fd]
                os.close(fd)
                return
            self.capture.add(self.outputs[fd], chunk)

    def close(self) -> None:
        for fd in list(self.outputs):
            self.drain(fd)
        for fd in list(self.outputs):
            os.close(fd)
        self.outputs.clear()
        self.sock.close()
        self.helper.close()


class SlotLink:
    """The judge's end of the SOCK_SEQPACKET control channel with its slot."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.armed: collections.deque[list[int]] = collections.deque()
        self.capture = OutputCapture(0)
        self.frame_limit = codec.MAX_FRAME_BYTES  # set per program from its limits

    def _send(self, message: dict[str, Any]) -> None:
        self.sock.send(json.dumps(message).encode())

    def _receive_one(self) -> dict[str, Any]:
        data, fds, _, _ = socket.recv_fds(self.sock, 1 << 16, 8)
        if not data:
            raise EOFError("the slot closed the control channel")
        message = json.loads(data)
        if message.get("op") == "arm":
            if len(fds) != 4:
                raise codec.ProtocolError("an armed candidate comes with four fds")
            self.armed.append(list(fds))
        return message

    def receive(self) -> dict[str, Any]:
        """The next slot message other than "arm" (armed candidates are queued)."""
        while True:
            message = self._receive_one()
            if message.get("op") != "arm":
                return message

    def take_armed(self) -> CandidateLink:
        while not self.armed:
            message = self._receive_one()
            if message.get("op") != "arm":
                raise codec.ProtocolError(f"expected an armed candidate, got {message!r:.100}")
        return CandidateLink(self.armed.popleft(), self.capture, self.frame_limit)

    def reap(self, expect_dead: bool) -> list[str]:
        self._send({"op": "reap", "expect_dead": expect_dead})
        return list(self.receive()["status"])

    def spawn(self) -> CandidateLink:
        self._send({"op": "spawn"})
        reply = self.receive()
        if reply.get("op") != "spawned":
            raise codec.ProtocolError(f"unexpected slot reply {reply!r:.100}")
        return self.take_armed()

    def done(self, retire: bool = False) -> None:
        """retire: this judge hit its memory limit; the slot replaces it (a judge
        that ran out of memory may hold a broken state)."""
        self._send({"op": "done", "retire": True} if retire else {"op": "done"})


class ResultWriter:
    def __init__(self, fd: int):
        self.fd, self.program_id = fd, ""

    def emit(self, **message: Any) -> None:
        message["id"] = self.program_id
        # "done" carries only output capped at Limits.output_bytes and numbers; the
        # judge is the only writer of this pipe, so that frame need not be atomic.
        payload = json.dumps(message).encode() if "done" in message else _fitted(message)
        data = _HEADER.pack(len(payload)) + payload
        while data:
            data = data[os.write(self.fd, data):]


def _fitted(message: dict[str, Any]) -> bytes:
    """A verdict frame as whole JSON of at most RESULT_FRAME_LIMIT bytes.

    The error type ("t") and the texts ("m", the syntax error's message) come from
    the candidate: they are capped by characters, then texts are halved until the
    escaped JSON fits. Never cut the encoded bytes: a torn frame is a protocol
    error that costs the pool its slot and the program a "sandbox failure".
    """
    if "t" in message:
        message["t"] = str(message["t"])[:TYPE_CHARS]
    if "m" in message:
        message["m"] = str(message["m"])[:MESSAGE_CHARS]
    if "syntax" in message:
        line, column, text = message["syntax"]
        message["syntax"] = [line, column, str(text)[:MESSAGE_CHARS]]
    while True:
        payload = json.dumps(message).encode()
        if len(payload) <= RESULT_FRAME_LIMIT:
            return payload
        if message.get("m"):
            message["m"] = message["m"][:len(message["m"]) // 2]
        elif message.get("syntax", [0, 0, ""])[2]:
            message["syntax"][2] = message["syntax"][2][:len(message["syntax"][2]) // 2]
        else:
            raise ValueError(f"a verdict frame of {len(payload)} bytes cannot be shortened")


def read_tests(fd: int, program_id: str) -> dict[str, Any]:
    """The tests frame of `program_id`, skipping leftovers of aborted programs."""
    while True:
        message = codec.read_fd_frame(fd)
        if message.get("id") == program_id:
            return message


class PreparedTests:
    """Compiled setup and tests plus each test's static calls, cached by source."""

    def __init__(self, setup: str, tests: tuple[str, ...], entry_point: str | None,
                 candidate_names: tuple[str, ...]):
        self.setup = compile(setup, "<setup>", "exec", dont_inherit=True)
        try:
            setup_names = prefetch.defined_names(ast.parse(setup))
        except SyntaxError:
            setup_names = set()
        known = (setup_names | set(dir(builtins))) - set(candidate_names)
        self.tests = []
        for index, source in enumerate(tests):
            try:
                code: Any = compile(source, f"<test {index}>", "exec", dont_inherit=True)
            except (SyntaxError, ValueError) as error:
                code = error if isinstance(error, SyntaxError) else SyntaxError(str(error))
            # Sent one at a time (judge.Judge.send_batch): the candidate never
            # holds a later call's arguments (class 1, docs/sandbox.md).
            self.tests.append((code, prefetch.static_calls(source, known, entry_point)))


def _prepared(cache: collections.OrderedDict, message: dict[str, Any]) -> PreparedTests:
    key = (message["setup"], tuple(message["tests"]), message["entry_point"],
           tuple(message["candidate_names"]))
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    prepared = PreparedTests(*key)
    cache[key] = prepared
    if len(cache) > CACHE_ENTRIES:
        cache.popitem(last=False)
    return prepared


def serve(control_fd: int, tests_fd: int, results_fd: int) -> None:
    """The judge process's whole life: one program per "start" from the slot."""
    codec.allow_long_ints()
    slot = SlotLink(socket.socket(fileno=control_fd))
    writer = ResultWriter(results_fd)
    cache: collections.OrderedDict = collections.OrderedDict()
    while True:
        try:
            start = slot.receive()
        except EOFError:
            return
        if start.get("op") != "start":
            continue
        started = time.monotonic()
        limits = Limits(**start["limits"])
        writer.program_id = start["id"]
        slot.capture = OutputCapture(limits.output_bytes)
        slot.frame_limit = codec.frame_limit(limits.memory_bytes)
        link = slot.take_armed()
        message = read_tests(tests_fd, start["id"])
        writer.emit(ack=1)
        tests = list(message["tests"])
        try:
            prepared = _prepared(cache, message)
        except (SyntaxError, ValueError) as error:
            the_judge = judge.Judge(limits, slot, link, writer.emit)
            the_judge.reap(expect_dead=False)
            the_judge.fail_all(len(tests), "error", "SetupError", f"setup does not compile: {error}")
            calls = 0
            retire = False
        else:
            the_judge = judge.Judge(limits, slot, link, writer.emit)
            judge_run.run(the_judge, prepared.setup, list(prepared.tests),
                          message["entry_point"], tuple(message["candidate_names"]))
            calls, retire = the_judge.calls, the_judge.out_of_memory
        writer.emit(done=1, stdout=slot.capture.text("stdout"), stderr=slot.capture.text("stderr"),
                    wall_s=time.monotonic() - started, calls=calls)
        slot.done(retire)
        if retire:
            return
