"""What a candidate sees: a fresh writable working directory and little else."""

import os
import socket

import pytest

from mtrl.envs.sandbox import Program, SandboxPool
from mtrl.envs.sandbox.isolation import CANDIDATE_ENV


def run(pool, code, *tests):
    return pool.submit(Program(code, tests)).result()


def test_working_directory_is_private_fresh_and_writable(pool):
    code = ("import os, tempfile\n"
            "def write():\n    open('note.txt', 'w').write('hi')\n"
            "    with tempfile.TemporaryFile() as f:\n        f.write(b'x')\n"
            "    return sorted(os.listdir('.'))\n"
            "def listing():\n    return os.listdir('.')\n")
    first = run(pool, code, "assert write() == ['note.txt']")
    second = run(pool, code, "assert listing() == []")  # nothing left by the first
    assert first.passed and second.passed, (first.tests, second.tests)


def test_nothing_writable_outside_the_working_directory(pool):
    code = ("import os\ndef attempt(path):\n    try:\n        open(path, 'w').write('x')\n"
            "        return 'written'\n    except OSError as error:\n"
            "        return type(error).__name__\n"
            "def listing(path):\n    try:\n        return os.listdir(path)\n"
            "    except OSError as error:\n        return type(error).__name__\n")
    # In the jail /tmp and /dev/shm are the candidate's own working directory.
    result = run(pool, code, "assert attempt('/x') == 'written'",
                 "assert attempt('/var/tmp/x') == 'written'",
                 "assert attempt('/usr/x') == 'written'",
                 "assert attempt('/opt/mtrl-harness/x') == 'written'",
                 "assert attempt('/proc/x') == 'written'")
    assert [t.status for t in result.tests] == ["failed"] * 5, result.tests
    mine = run(pool, code, "assert attempt('/tmp/x') == 'written'",
               "assert attempt('/dev/shm/y') == 'written'",
               "assert sorted(listing('/tmp')) == ['x', 'y']")
    assert mine.passed, mine.tests
    later = run(pool, code, "assert listing('/tmp') == []", "assert listing('/dev/shm') == []")
    assert later.passed, later.tests  # nothing of an earlier candidate is left


def test_environment_is_the_fixed_minimal_one(pool):
    os.environ["MTRL_SANDBOX_TEST_VAR"] = "visible?"  # set after the pool started: never seen
    try:
        code = "import os\ndef env():\n    return dict(os.environ)\n"
        result = run(pool, code, f"assert set(env()) <= {set(CANDIDATE_ENV)!r}",
                     "assert 'MTRL_SANDBOX_TEST_VAR' not in env()")
    finally:
        del os.environ["MTRL_SANDBOX_TEST_VAR"]
    assert result.passed, result.tests


def test_stdin_is_empty_and_processes_are_limited(pool):
    code = ("import os, sys\ndef read():\n    return sys.stdin.read()\n"
            "def fork():\n    try:\n        pid = os.fork()\n    except OSError as error:\n"
            "        return type(error).__name__\n    if pid == 0:\n        os._exit(0)\n"
            "    return 'forked'\n")
    result = run(pool, code, "assert read() == ''", "assert fork() == 'BlockingIOError'")
    assert result.passed, result.tests


def test_socket_refused_fallback_runs_programs_without_network(fast_limits):
    # The fallback for machines without network namespaces, forced here: the
    # candidate still serves the judge over its socket, yet cannot make one itself.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    code = ("import socket\ndef add(a, b):\n    return a + b\n"
            "def connect(port):\n    try:\n"
            "        socket.create_connection(('127.0.0.1', port), timeout=0.5).close()\n"
            "        return 'connected'\n    except OSError as e:\n        return type(e).__name__\n"
            "def raw(port):\n    try:\n        s = socket.socket()\n"
            "        s.connect(('127.0.0.1', port))\n        return 'connected'\n"
            "    except OSError as e:\n        return type(e).__name__\n")
    try:
        with SandboxPool(num_workers=1, limits=fast_limits, use_network_namespace=False, unsafe=True) as pool:
            assert pool.isolation.network == "socket-refused"
            result = run(pool, code, "assert add(2, 3) == 5",
                         f"assert connect({port}) == 'PermissionError'",
                         f"assert raw({port}) == 'PermissionError'")
            assert result.passed, result.tests
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected
    finally:
        listener.close()
