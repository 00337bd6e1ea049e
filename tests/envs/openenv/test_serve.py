"""mtrl's sandboxed code environment served over OpenEnv's protocol
(mtrl/serve_openenv.py, started as a real server on 127.0.0.1): a client written
against openenv-core's own package plays episodes on it, and the programs are scored
by mtrl's sandbox (reward, tests passed, feedback, episode end)."""

import pytest

pytest.importorskip("openenv.core")

from openenv.core.generic_client import GenericEnvClient

from tests.envs.openenv.servers import free_port, serving

SOLUTION = "```python\ndef f(x):\n    return 3*x+4\n```"  # intfn/train/00000: f(0) == 4


def test_an_openenv_client_scores_programs_through_mtrls_server(tmp_path):
    port = free_port()
    args = ["-m", "mtrl.serve_openenv", "--suite=intfn", f"--port={port}",
            "--max_turns=2"]
    with serving(args, port) as (url, _):
        with GenericEnvClient(base_url=url, message_timeout_s=60).sync() as env:
            first = env.reset(seed=0)
            assert first.observation["task_id"] == "intfn/train/00000"
            assert "f(0) == 4" in first.observation["text"] and first.reward is None
            wrong = env.step({"code": "```python\ndef f(x):\n    return x\n```"})
            assert not wrong.done and 0 < wrong.reward < 2.1
            assert wrong.observation["tests_passed"] < wrong.observation["tests_total"]
            assert "FAILED" in wrong.observation["text"]  # the failing test, as feedback
            right = env.step({"code": SOLUTION})  # turn 2: revised
            assert right.done and right.reward == pytest.approx(2.1)
            tests = right.observation["tests_total"]
            assert right.observation["tests_passed"] == tests > 0
            again = env.reset(task_id="intfn/train/00000")  # the same task by its id
            pwned = tmp_path / "pwned"  # a program's writes stay in mtrl's jail
            hostile = env.step({"code": f"```python\ndef f(x):\n    open({str(pwned)!r}, "
                                        "'w').write('x')\n    return 3*x+4\n```"})
            assert again.observation["text"] == first.observation["text"]
            assert hostile.observation["turn"] == 1 and not pwned.exists()
        # A reset the server cannot honour is an error reply, not an episode.
        with GenericEnvClient(base_url=url, message_timeout_s=60).sync() as env:
            with pytest.raises(RuntimeError, match="no task 'nope' in the train split"):
                env.reset(task_id="nope")
