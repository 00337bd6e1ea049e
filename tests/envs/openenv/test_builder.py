"""The OpenEnv build's schema request: a server that is not up, or that answers
something else, fails in one whole line naming the URL and the reason."""

import http.server
import socket
import threading

import pytest

from mtrl.envs.openenv.builder import action_key_from_schema


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_server_is_named_whole():
    url = f"http://127.0.0.1:{free_port()}/a/rather/long/path/to/show/nothing/is/cut/short"
    with pytest.raises(ValueError) as error:
        action_key_from_schema(url, timeout_s=5)
    message = str(error.value)
    assert message == (f"config.env.url: no OpenEnv server answers GET {url}/schema "
                       "(connection refused or host unreachable); start it first")


class NotOpenEnv(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 -- http.server's name
        status, body = (404, b"no") if self.path.startswith("/missing") else (200, b"{}")
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def other_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotOpenEnv)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_server_that_is_not_openenv_says_what_it_answered(other_server):
    with pytest.raises(ValueError, match=r"\(HTTP 404\); start it first$"):
        action_key_from_schema(f"{other_server}/missing", timeout_s=5)
    with pytest.raises(ValueError, match=r"not an OpenEnv schema with an 'action'\)"):
        action_key_from_schema(other_server, timeout_s=5)


def test_a_tool_call_action_takes_tool_and_argument(monkeypatch):
    """A tool environment (OpenEnv's CallToolAction, as its verifiers importer serves):
    env.action_key names TOOL.ARGUMENT, and each completion becomes that call."""
    import types

    from mtrl.envs.openenv.builder import build_openenv_env
    from mtrl.envs.openenv.env import OpenEnvConfig
    monkeypatch.setattr("mtrl.envs.openenv.builder.action_key_from_schema",
                        lambda url, timeout_s: ("", ["arguments", "tool_name"]))

    def request(key):
        options = OpenEnvConfig(url="http://127.0.0.1:9", action_key=key)
        return types.SimpleNamespace(env=types.SimpleNamespace(num_agents=1,
                                                               options=options))

    with pytest.raises(ValueError, match=r"action is a tool call .* TOOL.ARGUMENT"):
        build_openenv_env(request(""))
    env = build_openenv_env(request("submit.completion")).env
    try:
        assert env.move("w3") == {"type": "call_tool", "tool_name": "submit",
                                  "arguments": {"completion": "w3"}}
    finally:
        env.close()
