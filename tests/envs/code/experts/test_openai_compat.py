"""The HTTP expert against a real server on 127.0.0.1 (started here, in a thread)."""

import http.server
import json
import logging
import socket
import threading
import time

import pytest

from mtrl.envs.code.experts import ExpertRequest, OpenAICompatibleExpert, OpenAIExpertConfig
from mtrl.envs.code.task import CodeTask

TASK = CodeTask(task_id="t", prompt="Double x.", entry_point="f", tests=("assert f(1) == 2",))
SECRET = "sk-test-0123456789"


class Server:
    """Answers each POST with the next scripted reply: (status, body bytes, delay_s)."""

    def __init__(self):
        self.replies: list[tuple[int, bytes, float]] = []
        self.requests: list[dict] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                server.requests.append({"path": self.path, "body": body,
                                        "auth": self.headers.get("Authorization")})
                status, payload, delay = (server.replies.pop(0) if server.replies
                                          else (200, ok_body("default"), 0.0))
                time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up (timeout test)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       kwargs={"poll_interval": 0.02},
                                       daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def ok_body(text: str) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]}).encode()


@pytest.fixture
def server():
    srv = Server()
    yield srv
    srv.close()


def make_expert(url, **overrides):
    fields = dict(base_url=url, model="coder-x", api_key_env="MTRL_TEST_EXPERT_KEY",
                  timeout_s=2.0, max_retries=2, backoff_s=0.01, max_backoff_s=0.05)
    fields.update(overrides)
    return OpenAICompatibleExpert(OpenAIExpertConfig(**fields))


def test_good_response_request_shape_and_auth_header(server, monkeypatch, caplog):
    monkeypatch.setenv("MTRL_TEST_EXPERT_KEY", SECRET)
    server.replies.append((200, ok_body("  Change x + x to 2 * x.  "), 0.0))
    expert = make_expert(server.url)
    with caplog.at_level(logging.DEBUG):
        text = expert.suggest(TASK, "def f(x):\n    return x + x + 1", "- Tests: not all passed.")
    assert text == "Change x + x to 2 * x."
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == f"Bearer {SECRET}"
    body = request["body"]
    assert body["model"] == "coder-x" and body["max_tokens"] == 512 and body["temperature"] == 0.0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    user = body["messages"][1]["content"]
    assert "Double x." in user and "return x + x + 1" in user and "not all passed" in user
    assert SECRET not in caplog.text


def test_no_key_in_environment_sends_no_auth_header(server, monkeypatch):
    monkeypatch.delenv("MTRL_TEST_EXPERT_KEY", raising=False)
    assert make_expert(server.url).suggest(TASK, "code", "") == "default"
    assert server.requests[0]["auth"] is None


def test_500_then_success_is_retried(server, caplog):
    server.replies += [(500, b"oops", 0.0), (503, b"busy", 0.0), (200, ok_body("fixed"), 0.0)]
    expert = make_expert(server.url)
    assert expert.suggest(TASK, "code", "") == "fixed"
    assert len(server.requests) == 3 and expert.requests_sent == 3


def test_persistent_500_gives_empty_suggestion_with_warning(server, caplog):
    server.replies += [(500, b"oops", 0.0)] * 3
    expert = make_expert(server.url)
    with caplog.at_level(logging.WARNING):
        assert expert.suggest(TASK, "code", "") == ""
    assert len(server.requests) == 3  # first attempt + max_retries=2
    assert "failed after 3 attempts: HTTP 500" in caplog.text
    # Failures are not cached: the next call asks again.
    assert expert.suggest(TASK, "code", "") == "default"


@pytest.mark.parametrize("payload", [b"{not json", b'{"choices": []}', b'{"choices": [{}]}',
                                     b'{"choices": [{"message": {"content": 7}}]}'])
def test_malformed_response_gives_empty_suggestion_without_retry(server, caplog, payload):
    server.replies.append((200, payload, 0.0))
    with caplog.at_level(logging.WARNING):
        assert make_expert(server.url).suggest(TASK, "code", "") == ""
    assert len(server.requests) == 1
    assert "malformed response" in caplog.text or "not text" in caplog.text


def test_client_error_is_not_retried(server, caplog):
    server.replies.append((401, b'{"error": "bad key"}', 0.0))
    with caplog.at_level(logging.WARNING):
        assert make_expert(server.url).suggest(TASK, "code", "") == ""
    assert len(server.requests) == 1 and "HTTP 401" in caplog.text


def test_timeout_gives_empty_suggestion(server, caplog):
    server.replies += [(200, ok_body("too late"), 1.0)] * 2
    expert = make_expert(server.url, timeout_s=0.2, max_retries=1)
    with caplog.at_level(logging.WARNING):
        assert expert.suggest(TASK, "code", "") == ""
    assert expert.requests_sent == 2
    assert "failed after 2 attempts" in caplog.text and "timed out" in caplog.text


def test_connection_refused_gives_empty_suggestion(caplog):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    expert = make_expert(f"http://127.0.0.1:{port}/v1", max_retries=1)
    with caplog.at_level(logging.WARNING):
        assert expert.suggest(TASK, "code", "") == ""
    assert expert.requests_sent == 2 and "failed after 2 attempts" in caplog.text


def test_cache_hit_makes_no_second_request(server, tmp_path):
    server.replies.append((200, ok_body("cached answer"), 0.0))
    cache = str(tmp_path / "expert.sqlite")
    expert = make_expert(server.url, cache_path=cache)
    assert expert.suggest(TASK, "code", "diag") == "cached answer"
    assert expert.suggest(TASK, "code", "diag") == "cached answer"
    assert len(server.requests) == 1 and expert.cache_hits == 1
    expert.close()
    # The SQLite cache survives the process-level object.
    reopened = make_expert(server.url, cache_path=cache)
    assert reopened.suggest(TASK, "code", "diag") == "cached answer"
    assert len(server.requests) == 1
    # A different request is not a hit.
    assert reopened.suggest(TASK, "other code", "diag") == "default"
    assert len(server.requests) == 2
    reopened.close()


def test_suggest_batch_keeps_order_and_dedupes(server):
    expert = make_expert(server.url, max_workers=3)
    requests = [ExpertRequest(TASK, f"code {i % 2}", "") for i in range(4)]
    answers = expert.suggest_batch(requests)
    assert answers == ["default"] * 4
    assert len(server.requests) == 2  # two distinct prompts


def test_config_validation():
    with pytest.raises(ValueError, match="http"):
        OpenAIExpertConfig(base_url="ftp://x", model="m")
    with pytest.raises(ValueError, match="timeout_s"):
        OpenAIExpertConfig(base_url="http://127.0.0.1:1/v1", model="m", timeout_s=0)
    assert OpenAIExpertConfig(base_url="https://api.example.com/v1/", model="m").endpoint == (
        "https://api.example.com/v1/chat/completions")
