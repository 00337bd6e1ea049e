"""The judge holds at most about one frame of what a candidate sent unasked.

While the judge waited on one of a two-agent program's sockets it read the other
too and kept every byte: a helper (or main) that flooded the socket the judge was
not waiting on grew the trusted judge by the size of the flood (271 MB for 256 MiB
from a 64 MiB candidate), and a MemoryError there was taken for the judge's own, a
"sandbox failure" never cached. Now each socket's unread data is capped at one
frame limit (judge_main.CandidateLink.capacity); more is the candidate's protocol
error, a failed test cached like any other, and a MemoryError met while relaying
the helper's answer is the candidate's doing too.
"""

import pytest

from mtrl.envs.sandbox import Limits, Program, SandboxPool, codec
from mtrl.envs.sandbox.relay import HelperRelay

LIMITS = Limits(wall_s_per_test=10.0, wall_s_total=20.0, cpu_s=10.0, memory_bytes=384 << 20)
FLOOD_MIB = 256
# Writes FLOOD_MIB MiB of zeros (empty frames, as the judge parses them) to the
# process's socket to the judge, from a thread, a moment after it starts.
FLOOD = ("import os, stat, threading, time\n"
         "def _socket():\n"
         "    for fd in range(3, 64):\n"
         "        try:\n"
         "            if stat.S_ISSOCK(os.fstat(fd).st_mode):\n"
         "                return fd\n"
         "        except OSError:\n"
         "            pass\n"
         "def _flood():\n"
         "    fd, chunk = _socket(), bytes(1 << 20)\n"
         "    time.sleep(0.3)\n"
         f"    for _ in range({FLOOD_MIB}):\n"
         "        os.write(fd, chunk)\n"
         "def flood():\n"
         "    threading.Thread(target=_flood, daemon=True).start()\n")
CASES = {
    # The judge waits for main's answer while the helper floods its own socket.
    "helper floods": Program("import time\ndef add(a, b):\n    time.sleep(3)\n"
                             "    return aux(a, b)\n", ("assert add(2, 3) == 5",),
                             helper_code=FLOOD + "flood()\ndef aux(a, b):\n    return a + b\n",
                             helper_names=("aux",)),
    # The judge waits for the helper's answer while main floods its socket.
    "main floods": Program(FLOOD + "def add(a, b):\n    flood()\n    return aux(a, b)\n",
                           ("assert add(2, 3) == 5",), helper_names=("aux",),
                           helper_code="import time\ndef aux(a, b):\n    time.sleep(3)\n"
                                       "    return a + b\n"),
}


def _depth(pid: int) -> int:
    """How many PID namespaces `pid` is seen in (0: it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            return next(len(line.split()) - 1 for line in handle if line.startswith("NSpid:"))
    except (OSError, StopIteration):
        return 0


def _peak_mib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        return next(int(line.split()[1]) >> 10 for line in handle if line.startswith("VmHWM:"))


def _judge_and_zygote(slot: int) -> list[int]:
    """The slot's long-lived children: those in the slot's own PID namespace."""
    with open(f"/proc/{slot}/task/{slot}/children") as handle:
        children = [int(child) for child in handle.read().split()]
    return [child for child in children if _depth(child) == _depth(slot)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_flood_of_the_other_socket_is_the_candidates_protocol_error(tmp_path, name):
    with SandboxPool(num_workers=1, limits=LIMITS, cache_path=tmp_path / "v.sqlite") as pool:
        assert pool.submit(Program("def f():\n    return 1\n", ("assert f() == 1",))
                           ).result().passed
        trusted = _judge_and_zygote(pool.slot_python_pids()[0])
        before = {pid: _peak_mib(pid) for pid in trusted}
        result = pool.submit(CASES[name]).result()
        grown = {pid: _peak_mib(pid) - peak for pid, peak in before.items()}
        again = pool.submit(CASES[name]).result()
        assert pool.submit(Program("def f():\n    return 2\n", ("assert f() == 2",))
                           ).result().passed
    # One frame limit here is 6 MiB; the flood was 256 MiB.
    assert codec.frame_limit(LIMITS.memory_bytes) == 6 << 20
    assert len(grown) == 2 and max(grown.values()) < 32, grown
    assert not result.error, result
    assert [(t.status, t.error_type) for t in result.tests] == [("error", "CandidateError")]
    assert "had not asked for" in result.tests[0].message, result.tests
    assert again.cached and again.tests == result.tests


# The honest twin: main's threads send requests of a few MiB together while the
# helper is busy (they wait in the judge, under one frame limit in all), and the
# helper answers with a value of MiBs.
BUSY_HELPER = ("import time\ndef aux(text):\n    time.sleep(0.2)\n"
               "    return text.upper()\n")
THREADS = ("import threading\ndef shout(n):\n    out = [None] * 3\n"
           "    def work(i):\n        out[i] = aux(chr(97 + i) * n)\n"
           "    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]\n"
           "    for thread in threads:\n        thread.start()\n"
           "    for thread in threads:\n        thread.join()\n"
           "    return [len(s) for s in out], out[2][:2]\n")


def test_honest_two_agent_programs_with_large_values_still_pass(pool):
    n = 1 << 20  # three requests of 1 MiB each wait while the helper sleeps
    program = Program(THREADS, (f"assert shout({n}) == ([{n}] * 3, 'CC')",),
                      helper_code=BUSY_HELPER, helper_names=("aux",))
    result = pool.submit(program, LIMITS).result()
    assert result.passed and result.helper_calls == 3, result


class _Link:
    """A link whose helper answers with a frame that does not fit the judge's memory."""

    helper_hello = {"names": {"aux": ["function"]}}

    def send(self, payload, helper=False):
        pass

    def receive(self, helper=False):
        raise MemoryError()


def test_a_memory_error_relaying_the_helpers_answer_is_the_candidates():
    relay = HelperRelay(budget_items=1 << 10)
    frame = relay.relay(_Link(), {"aux": "aux", "args": {"$tuple": []}, "id": 0})
    assert b"RuntimeError" in frame and b"memory" in frame and relay.returned == 0
