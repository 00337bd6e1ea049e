"""mtrl's sandboxed code environment served over OpenEnv's protocol
(mtrl/serve_openenv.py, started as a real server on 127.0.0.1): it says where it
listens in one line, a client written against the openenv package alone plays
episodes on it, the programs are scored by mtrl's sandbox (reward, tests passed,
feedback, declared success, episode end), its task list is the suite's splits, and
clients that disconnect (closing, dropping the socket, mid-episode) leave no
traceback on the server."""

import socket

import pytest
import requests

pytest.importorskip("openenv.core")

from openenv.core.generic_client import GenericEnvClient

from mtrl.envs.openenv.client import EpisodeClient
from tests.envs.openenv.servers import free_port, server_log, serving

SOLUTION = "```python\ndef f(x):\n    return 3*x+4\n```"  # intfn/train/00000: f(0) == 4


def test_an_openenv_client_scores_programs_through_mtrls_server(tmp_path):
    port = free_port()
    args = ["-m", "mtrl.serve_openenv", "--suite=intfn", f"--port={port}",
            "--max_turns=2"]
    with serving(args, port) as (url, process):
        assert server_log(process).splitlines()[0] == (
            f"serving mtrl's code environment (intfn, 4 sessions) at {url} (OpenEnv "
            f"WebSocket ws://127.0.0.1:{port}/ws)")
        with GenericEnvClient(base_url=url, message_timeout_s=60).sync() as env:
            first = env.reset(seed=0)
            assert first.observation["metadata"]["task_id"] == "intfn/train/00000"
            assert "f(0) == 4" in first.observation["text"] and first.reward is None
            wrong = env.step({"code": "```python\ndef f(x):\n    return x\n```"})
            assert not wrong.done and 0 < wrong.reward < 2.1
            assert wrong.observation["metadata"]["success"] is False
            assert wrong.observation["tests_passed"] < wrong.observation["tests_total"]
            assert "FAILED" in wrong.observation["text"]  # the failing test, as feedback
            right = env.step({"code": SOLUTION})  # turn 2: revised
            assert right.done and right.reward == pytest.approx(2.1)
            assert right.observation["metadata"]["success"] is True
            tests = right.observation["tests_total"]
            assert right.observation["tests_passed"] == tests > 0
            again = env.reset(task_id="intfn/train/00000")  # the same task by its id
            pwned = tmp_path / "pwned"  # a program's writes stay in mtrl's jail
            hostile = env.step({"code": f"```python\ndef f(x):\n    open({str(pwned)!r}, "
                                        "'w').write('x')\n    return 3*x+4\n```"})
            assert again.observation["text"] == first.observation["text"]
            assert hostile.observation["turn"] == 1 and not pwned.exists()
            listed = env.reset(split="validation", index=1)  # a task of the task list
            assert listed.observation["metadata"]["task_id"] == "intfn/heldout/00001"
        # A reset the server cannot honour is an error reply, not an episode.
        with GenericEnvClient(base_url=url, message_timeout_s=60).sync() as env:
            with pytest.raises(RuntimeError, match="no task 'nope' in the train split"):
                env.reset(task_id="nope")
        # The task list: the suite's splits (intfn has no test split of its own).
        splits = requests.get(f"{url}/mtrl_code/splits", timeout=60).json()
        assert splits == [{"name": "train", "type": "train"},
                          {"name": "validation", "type": "validation"}]
        count = requests.post(f"{url}/mtrl_code/num_tasks", json={"split": "validation"},
                              timeout=60).json()["num_tasks"]
        assert count == 100
        # Clients that go away: mtrl's client (closing its sessions), one that drops
        # its socket mid-episode, one that connects and says nothing.
        client = EpisodeClient(url, concurrency=4, timeout_s=60)
        try:
            played = client.play([({"split": "train", "index": i}, [{"code": "x"}])
                                  for i in range(8)])
            assert len(played) == 8
        finally:
            client.close()
        for message in (b'{"type": "reset", "data": {}}', b""):
            with socket.create_connection(("127.0.0.1", port)) as raw:
                raw.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                            b"Connection: Upgrade\r\nSec-WebSocket-Key: "
                            b"dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
                raw.recv(1024)
                if message:  # a masked text frame, then the socket drops
                    raw.sendall(bytes([0x81, 0x80 | len(message), 0, 0, 0, 0]) + message)
        requests.get(f"{url}/health", timeout=60)  # the server is still up
        log = server_log(process)
    assert "Traceback" not in log and "WebSocketDisconnect" not in log, log[-3000:]
