"""What one client can hold of mtrl's OpenEnv server (mtrl/serve_openenv.py, a real
uvicorn server on 127.0.0.1):

- a request body larger than a completion needs is refused with 413 before it is
  buffered: a declared Content-Length over the limit is answered before one byte of
  the body is sent, a chunked body as soon as it passes the limit (the rest is
  never sent); a WebSocket message over the limit closes the connection (1009);
  honest requests near the completion cap are served;
- an idle session is closed after --idle_timeout_s, and a client that was locked
  out then gets in; a step longer than the timeout is not idleness.
"""

import json
import socket

import pytest

pytest.importorskip("openenv.core")

import requests
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from mtrl.envs.text import MAX_COMPLETION_CHARS
from mtrl.envs.sandbox import Limits
from mtrl.serve_openenv import IDLE_TIMEOUT_S, MAX_BODY_BYTES, ServerLimits, step_worst_case_s
from tests.envs.openenv.servers import free_port, serving

IDLE_S = 3.0
WAIT_S = 60.0  # generous: the checks below never depend on how fast the host is
SOLUTION = "```python\ndef f(x):\n    return 3*x+4\n```"  # intfn/train/00000


@pytest.fixture(scope="module")
def server():
    port = free_port()
    args = ["-m", "mtrl.serve_openenv", "--suite=intfn", f"--port={port}", "--max_turns=2",
            "--max_sessions=2", f"--idle_timeout_s={IDLE_S}"]
    with serving(args, port) as (url, _):
        yield port, url


def _status(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1])


def _read_reply(sock: socket.socket) -> bytes:
    sock.settimeout(WAIT_S)  # without the limit the server waits for the body: timeout
    reply = b""
    while b"\r\n\r\n" not in reply:
        chunk = sock.recv(65536)
        if not chunk:
            break
        reply += chunk
    return reply


def _head(port: int, headers: str) -> bytes:
    return (f"POST /step HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\n{headers}\r\n").encode()


def test_a_declared_body_over_the_limit_is_refused_before_it_is_sent(server):
    port, _ = server
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(_head(port, f"Content-Length: {64 << 20}\r\n"))  # no body byte follows
        assert _status(_read_reply(sock)) == 413


def test_a_chunked_body_is_cut_off_at_the_limit(server):
    port, _ = server
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(_head(port, "Transfer-Encoding: chunked\r\n"))
        chunk = 64 << 10
        sent = 0
        while sent <= MAX_BODY_BYTES:  # one byte past the limit, and no final chunk
            size = min(chunk, MAX_BODY_BYTES + 1 - sent)
            sock.sendall(f"{size:x}\r\n".encode() + b"x" * size + b"\r\n")
            sent += size
        assert _status(_read_reply(sock)) == 413


def test_a_request_a_completion_needs_is_served(server):
    """The honest twin: a completion at the cap, every character outside the BMP (the
    JSON's worst case, 12 bytes a character), is read and answered like a small one."""
    _, url = server
    small = requests.post(f"{url}/step", json={"action": {"code": "x"}}, timeout=WAIT_S)
    body = json.dumps({"action": {"code": "😀" * MAX_COMPLETION_CHARS}}).encode()
    assert len(body) > 12 * MAX_COMPLETION_CHARS
    large = requests.post(f"{url}/step", data=body, timeout=WAIT_S,
                          headers={"Content-Type": "application/json"})
    assert large.status_code == small.status_code != 413, large.text[:300]


def _send(ws, message: dict) -> dict:
    ws.send(json.dumps(message))
    return json.loads(ws.recv(timeout=WAIT_S))


def _ws(url: str):
    return connect(url.replace("http", "ws") + "/ws", proxy=None, max_size=None,
                   open_timeout=WAIT_S)


def test_websocket_messages_are_bounded_but_a_completion_at_the_cap_is_played(server):
    _, url = server
    with _ws(url) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            _send(ws, {"type": "step", "data": {"code": "x" * (MAX_BODY_BYTES + 1)}})
        assert closed.value.rcvd.code == 1009  # message too big
    with _ws(url) as ws:
        assert _send(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        code = SOLUTION.replace("4\n```", "4\n# " + "😀" * (MAX_COMPLETION_CHARS - 40) + "\n```")
        reply = _send(ws, {"type": "step", "data": {"code": code}})
        assert reply["type"] == "observation", reply
        observation = reply["data"]["observation"]
        assert observation["tests_passed"] == observation["tests_total"] > 0


def test_idle_sessions_are_closed_and_a_locked_out_client_gets_in(server):
    _, url = server
    idle = [_ws(url), _ws(url)]  # --max_sessions=2, both taken
    try:
        for ws in idle:
            assert _send(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        with _ws(url) as third:
            refused = json.loads(third.recv(timeout=WAIT_S))
            assert refused["type"] == "error" and "capacity" in json.dumps(refused).lower()
        for ws in idle:  # silent from here on: the server closes both
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=WAIT_S)
            assert closed.value.rcvd.code == 1001 and "idle" in closed.value.rcvd.reason
        with _ws(url) as late:
            assert _send(late, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
    finally:
        for ws in idle:
            ws.close()


def test_a_step_longer_than_the_idle_timeout_is_not_idleness(server):
    """The honest twin: the idle clock runs only while the server waits for the client."""
    _, url = server
    slow = ("```python\nimport time\ndef f(x):\n    time.sleep(1.5)\n"
            "    return 3*x+4\n```")  # every test sleeps: the step outlasts IDLE_S
    with _ws(url) as ws:
        assert _send(ws, {"type": "reset", "data": {"seed": 0}})["type"] == "observation"
        reply = _send(ws, {"type": "step", "data": {"code": slow}})
        assert reply["type"] == "observation", reply
        assert _send(ws, {"type": "step", "data": {"code": SOLUTION}})["type"] == "observation"


def test_the_default_idle_timeout_outlasts_a_step_and_limits_are_checked():
    # The environment's sandbox runs under the default Limits (CodeEnvConfig.limits).
    assert IDLE_TIMEOUT_S > step_worst_case_s(Limits(), ServerLimits().max_sessions) == 80.0
    for bad in ({"max_body_bytes": 0}, {"idle_timeout_s": 0.0}, {"max_sessions": 0}):
        with pytest.raises(ValueError, match="must be positive"):
            ServerLimits(**bad)
