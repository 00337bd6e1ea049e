"""Verdicts that trust nothing the candidate raises.

The judge took every MemoryError that reached it for its own: a candidate that
raised one (or ran out of its own memory) got an uncached "sandbox failure" and
the judge was replaced every time. Now the judge tells its own out-of-memory from
the candidate's by where it happened (a relayed exception is marked where the
judge rebuilds it, remote.remote_exception), so the candidate's is a failed test,
cached like one, and the judge lives on. The same holds for the set-up failure
status (test_candidate_tmpfs.py).
"""

import pytest

from mtrl.envs.sandbox import Limits, Program, SandboxPool

LIMITS = Limits(wall_s_per_test=5.0, wall_s_total=10.0, cpu_s=2.0, memory_bytes=384 << 20)
MEMORY_ERRORS = {
    "raised": "def f():\n    raise MemoryError('the judge ran out of memory')\n",
    "allocated": "def f():\n    return len(bytearray(1 << 40))\n",
}


def _depth(pid: int) -> int:
    """How many PID namespaces `pid` is seen in (a candidate has one of its own)."""
    with open(f"/proc/{pid}/status") as handle:
        return next(len(line.split()) - 1 for line in handle if line.startswith("NSpid:"))


def _zygote_and_judge(slot: int) -> set[int]:
    """The slot's long-lived children: those in the slot's own PID namespace."""
    with open(f"/proc/{slot}/task/{slot}/children") as handle:
        children = [int(child) for child in handle.read().split()]
    return {child for child in children if _depth(child) == _depth(slot)}


@pytest.mark.parametrize("name", sorted(MEMORY_ERRORS))
def test_a_candidates_memory_error_is_a_failed_test(tmp_path, name):
    program = Program(MEMORY_ERRORS[name], ("assert f() == 1",))
    with SandboxPool(num_workers=1, limits=LIMITS, cache_path=tmp_path / "v.sqlite") as pool:
        slot = pool.slot_python_pids()[0]
        before = _zygote_and_judge(slot)
        result = pool.submit(program).result()
        again = pool.submit(program).result()
        after = _zygote_and_judge(slot)
        assert pool.submit(Program("def f():\n    return 1\n", ("assert f() == 1",))
                           ).result().passed
    assert not result.error and not result.passed, result
    assert [(t.status, t.error_type) for t in result.tests] == [("error", "MemoryError")]
    assert again.cached and again.tests == result.tests
    assert len(before) == 2 and after == before  # the judge was not replaced
