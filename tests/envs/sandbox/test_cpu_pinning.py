"""Slots keep to one CPU each (SandboxPool(pin_cpus=...), slot_main.pin_to_cpu): the
slot, its judge and zygote, and every candidate, which inherits the mask."""

import os

from mtrl.envs.sandbox import Program, SandboxPool

# The candidate reports the CPUs it may run on through a test's failure message.
REPORT_MASK = Program(
    code="import os\ndef mask():\n    return sorted(os.sched_getaffinity(0))\n",
    tests=("assert mask() == 'shown', mask()",))


def _allowed(pid: int) -> list[int]:
    return sorted(os.sched_getaffinity(pid))


def _candidate_mask(pool: SandboxPool) -> list[int]:
    (test,) = pool.submit(REPORT_MASK).result().tests
    assert test.status == "failed", test
    return [int(x) for x in test.message.strip("[]").split(",")]


def _tree(pid: int) -> list[int]:
    """pid and its descendants (through every thread's children)."""
    found = [pid]
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                children = handle.read().split()
        except OSError:
            continue
        for child in children:
            found += _tree(int(child))
    return found


def test_each_slot_and_its_processes_keep_to_their_own_cpu(fast_limits):
    allowed = _allowed(0)
    with SandboxPool(num_workers=3, limits=fast_limits) as pool:
        expected = [allowed[i % len(allowed)] for i in range(3)]
        for slot_pid, cpu in zip(pool.slot_python_pids(), expected):
            processes = _tree(slot_pid)
            assert len(processes) >= 3  # the slot, its zygote and judge, armed candidates
            assert {tuple(_allowed(pid)) for pid in processes} == {(cpu,)}
        seen = {tuple(_candidate_mask(pool)) for _ in range(6)}
    assert seen <= {(cpu,) for cpu in expected}


def test_unpinned_slots_may_run_anywhere(fast_limits):
    allowed = _allowed(0)
    with SandboxPool(num_workers=1, limits=fast_limits, pin_cpus=False) as pool:
        for pid in _tree(pool.slot_python_pids()[0]):
            assert _allowed(pid) == allowed
        assert _candidate_mask(pool) == allowed
