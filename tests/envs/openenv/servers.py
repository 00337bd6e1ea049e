"""Start OpenEnv servers on 127.0.0.1 for the tests (a free port each), wait until
/health answers, and stop them."""

import contextlib
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time

import requests

ROOT = pathlib.Path(__file__).resolve().parents[3]
TOY = pathlib.Path(__file__).with_name("toy_server.py")
TASKS = pathlib.Path(__file__).with_name("tasks_server.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(args: list[str], port: int, timeout_s: float = 120.0):
    """Runs `python *args` (a server listening on `port`) until the block ends;
    yields its http URL once GET /health answers."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # Its output goes to a file: a pipe nobody reads would block the server once full.
    log = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, stdout=log,
                               stderr=subprocess.STDOUT, text=True)
    process.mtrl_log = log
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"server {args} exited: {log.read()[-2000:]}")
            try:
                if requests.get(f"{url}/health", timeout=1).ok:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"server {args} did not answer /health in {timeout_s} s")
            time.sleep(0.2)
        yield url, process
    finally:
        _stop(process, log)


def _stop(process, log) -> None:
    try:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if os.environ.get("MTRL_SHOW_SERVER_LOG"):
            log.seek(0)
            print(log.read()[-5000:])
    finally:
        log.close()


def server_log(process) -> str:
    """What a server started by `serving` has printed so far (read at an offset: the
    server shares the file's position)."""
    fd = process.mtrl_log.fileno()
    return os.pread(fd, os.fstat(fd).st_size, 0).decode("utf-8", "replace")


def toy_server(port: int):
    return serving([str(TOY), str(port)], port)


def tasks_server(port: int, max_sessions: int = 4):
    return serving([str(TASKS), str(port), str(max_sessions)], port)
