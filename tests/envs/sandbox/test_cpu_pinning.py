"""Slots keep to one CPU each (SandboxPool(pin_cpus=...), slot_main.pin_to_cpu): the
slot, its judge and zygote, and every candidate, which inherits the mask."""

import os

import pytest

from mtrl.envs.sandbox import Program, SandboxPool

# The candidate reports the CPUs it may run on through a test's failure message.
REPORT_MASK = Program(
    code="import os\ndef mask():\n    return sorted(os.sched_getaffinity(0))\n",
    tests=("assert mask() == 'shown', mask()",))


@pytest.fixture
def cpus():
    """This process restricted to at most two CPUs while a test runs (the pool reads
    the mask when it starts), so the cases below mean the same on any machine."""
    before = os.sched_getaffinity(0)
    chosen = sorted(before)[:2]
    os.sched_setaffinity(0, chosen)
    try:
        yield chosen
    finally:
        os.sched_setaffinity(0, before)


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


@pytest.mark.parametrize("pin_cpus", [True, None])
def test_each_slot_and_its_processes_keep_to_their_own_cpu(fast_limits, cpus, pin_cpus):
    """True always; None (the default) because 3 slots cover the (at most 2) CPUs."""
    expected = [cpus[i % len(cpus)] for i in range(3)]
    with SandboxPool(num_workers=3, limits=fast_limits, pin_cpus=pin_cpus) as pool:
        for slot_pid, cpu in zip(pool.slot_python_pids(), expected):
            processes = _tree(slot_pid)
            assert len(processes) >= 3  # the slot, its zygote and judge, armed candidates
            assert {tuple(_allowed(pid)) for pid in processes} == {(cpu,)}
        seen = {tuple(_candidate_mask(pool)) for _ in range(6)}
    assert seen <= {(cpu,) for cpu in expected}


@pytest.mark.parametrize("pin_cpus", [False, None])
def test_unpinned_slots_may_run_anywhere(fast_limits, cpus, pin_cpus):
    """None pins only a pool whose slots cover every CPU: one slot of two CPUs (the
    CLI's pool) is left to the kernel, so concurrent processes do not all land on
    the first CPU."""
    if pin_cpus is None and len(cpus) < 2:
        pytest.skip("one CPU: a one-slot pool covers it (and is pinned to it)")
    with SandboxPool(num_workers=1, limits=fast_limits, pin_cpus=pin_cpus) as pool:
        for pid in _tree(pool.slot_python_pids()[0]):
            assert _allowed(pid) == cpus
        assert _candidate_mask(pool) == cpus
