"""Slots keep to one CPU each (SandboxPool(pin_cpus=...), slot_main.pin_to_cpu): the
slot, its judge and zygote, and every candidate, which inherits the mask."""

import errno
import os
import time

import pytest

from mtrl.envs.sandbox import Limits, Program, SandboxPool

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


# Pinning was placement only, and a candidate's threads gave
# themselves another slot's CPU. Now sched_setaffinity (and the scheduler calls
# beside it) are outside the allowlist: a candidate keeps its slot's CPU.
HOSTILE = """
import os, threading, time

def spread(seconds, count, move=True):
    tried, stop = [], time.monotonic() + seconds
    def spin():
        for target in (0, threading.get_native_id()) if move else ():
            try:
                os.sched_setaffinity(target, set(range(64)))
                tried.append('moved')
            except OSError as error:
                tried.append(error.errno)
        while time.monotonic() < stop:
            pass
    threads = [threading.Thread(target=spin) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(set(map(str, tried))), sorted(os.sched_getaffinity(0))
"""
# The honest slot's fixed work: its wall time over its own CPU time, which is 1
# when nothing else runs on its CPU (and does not move with the CPU's speed).
HONEST = ("import time\ndef work(n):\n    wall, cpu = time.perf_counter(), time.thread_time()\n"
          "    total = 0\n    for i in range(n):\n        total += i * i\n"
          "    return (time.perf_counter() - wall) / max(time.thread_time() - cpu, 1e-6)\n")
HOSTILE_LIMITS = Limits(wall_s_per_test=15.0, wall_s_total=20.0, cpu_s=30.0,
                        memory_bytes=512 << 20)


def _ratio(pool: SandboxPool) -> float:
    (test,) = pool.submit(Program(HONEST, ("r = work(400_000)\nassert r < 0, r",))).result().tests
    return float(test.message)


def _busiest_candidate(pool: SandboxPool) -> int | None:
    """The pool's candidate process with the most threads, once it has 8."""
    best, threads = None, 0
    for pid in _tree(pool.slot_python_pids()[0]):
        try:
            count = len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
        if count > threads:
            best, threads = pid, count
    return best if threads >= 8 else None


def _placement(pid: int) -> set[tuple[str, int]]:
    """(allowed CPUs, CPU it last ran on) of each thread of `pid`."""
    seen = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as handle:
                allowed = next(line.split()[1] for line in handle
                               if line.startswith("Cpus_allowed_list:"))
            with open(f"/proc/{pid}/task/{tid}/stat") as handle:
                last = int(handle.read().rsplit(")", 1)[1].split()[36])
        except (OSError, StopIteration):
            continue
        seen.add((allowed, last))
    return seen


def _pool_on(cpu: int) -> SandboxPool:
    """A one-slot pool pinned to `cpu` (the pool pins to the first CPU it may use)."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        return SandboxPool(num_workers=1, limits=HOSTILE_LIMITS, pin_cpus=True)
    finally:
        os.sched_setaffinity(0, before)


def _busy_neighbour(pool: SandboxPool, honest: SandboxPool, cpus: list[int], move: bool
                    ) -> tuple[float, set]:
    """Runs 16 spinning threads in `pool`'s slot (trying to take every CPU when
    `move`); returns the `honest` pool's best slowdown meanwhile and where the
    spinning threads were allowed to run and ran."""
    busy = pool.submit(Program(HOSTILE, (f"r = spread(4.0, 16, {move})\nassert r == 0, r",)))
    deadline = time.monotonic() + 10.0
    while (pid := _busiest_candidate(pool)) is None:
        assert time.monotonic() < deadline and not busy.done(), busy
        time.sleep(0.05)
    placement = _placement(pid)
    during = min(_ratio(honest) for _ in range(5))
    placement |= _placement(pid)
    (verdict,) = busy.result().tests
    tried = [str(errno.EPERM)] if move else []
    assert verdict.message == repr((tried, [cpus[0]])), verdict
    return during, placement


def test_a_hostile_slot_keeps_its_cpu_and_cannot_slow_another(cpus):
    """The property: every thread of a hostile candidate that tries to take every
    CPU stays allowed on, and runs on, its slot's CPU only. The effect: an honest
    slot's fixed work on the other CPU is slowed by the hostile slot at most 1.3x
    as much as by a slot just as busy that does not try to move (so that other
    processes of a shared machine that a busy CPU pushes onto the honest one
    count on both sides). Best of five samples each; up to three rounds, since
    other load comes and goes: an escaped hostile slows every sample of every
    round several times over."""
    if len(cpus) < 2:
        pytest.skip("one CPU: there is no other slot's CPU to take")
    busy_pool, honest_pool = _pool_on(cpus[0]), _pool_on(cpus[1])
    try:
        slowdowns = []
        for _ in range(3):
            benign, _ = _busy_neighbour(busy_pool, honest_pool, cpus, move=False)
            hostile, placement = _busy_neighbour(busy_pool, honest_pool, cpus, move=True)
            assert placement and placement <= {(str(cpus[0]), cpus[0])}, placement
            slowdowns.append(hostile / benign)
            if slowdowns[-1] <= 1.3:
                break
        assert min(slowdowns) <= 1.3, slowdowns
    finally:
        busy_pool.close()
        honest_pool.close()
