"""Pool behaviour: ordering, futures, validation, survival of killed slots."""

import concurrent.futures
import os
import signal
import time

import pytest

from mtrl.envs.sandbox import Limits, Program, SandboxPool, network_isolation
from mtrl.envs.sandbox import pool as pool_module

GOOD = Program("def sq(x):\n    return x * x\n", ("assert sq(3) == 9",))


def test_run_batch_keeps_order(pool):
    programs = [Program(f"def v():\n    return {i}\n", (f"assert v() == {i % 3}",))
                for i in range(12)]
    results = pool.run_batch(programs)
    assert [r.passed for r in results] == [i % 3 == i for i in range(12)]


def test_submit_returns_futures(pool):
    futures = [pool.submit(GOOD) for _ in range(4)]
    done, _ = concurrent.futures.wait(futures, timeout=60)
    assert len(done) == 4 and all(f.result().passed for f in futures)


def test_invalid_arguments():
    with pytest.raises(ValueError):
        SandboxPool(num_workers=0)
    with pytest.raises(ValueError):
        SandboxPool(num_workers=1, limits="fast")
    with pytest.raises(ValueError):
        Limits(wall_s_per_test=0)


def test_submit_validates_and_closed_pool_refuses(fast_limits):
    pool = SandboxPool(num_workers=1, limits=fast_limits)
    with pytest.raises(ValueError):
        pool.submit("print(1)")
    pool.close()
    pool.close()  # idempotent
    with pytest.raises(RuntimeError):
        pool.submit(GOOD)


def test_isolation_report_matches_probe(pool):
    assert pool.isolation.network == network_isolation() == "netns"
    # The default pool runs in the bubblewrap jail, candidates under seccomp.
    assert pool.isolation.filesystem == "jail" and pool.isolation.pid_namespace
    assert pool.isolation.jail.startswith("bubblewrap ") and pool.isolation.seccomp
    assert not pool.isolation.unsafe
    line = pool.submit(GOOD).result().isolation
    assert line == pool.isolation.summary() and "seccomp=on" in line
    assert not line.startswith("UNSAFE")


def test_killed_slot_is_replaced(fast_limits):
    with SandboxPool(num_workers=1, limits=fast_limits) as pool:
        assert pool.submit(GOOD).result().passed
        slow = pool.submit(Program("import time\ndef nap():\n    time.sleep(5)\n",
                                   ("assert nap() is None",)))
        time.sleep(0.3)
        os.killpg(pool.slot_pids()[0], signal.SIGKILL)  # the slot and everything in it
        broken = slow.result(timeout=30)
        assert not broken.passed and broken.error.startswith("sandbox failure")
        assert pool.replaced_slots == 1
        after = pool.run_batch([GOOD] * 3)
        assert all(r.passed for r in after)


def test_broken_results_are_not_cached(tmp_path, fast_limits):
    with SandboxPool(num_workers=1, limits=fast_limits, cache_path=tmp_path / "c.db") as pool:
        slow = pool.submit(Program("import time\ndef nap():\n    time.sleep(5)\n",
                                   ("assert nap() is None",)))
        time.sleep(0.3)
        os.killpg(pool.slot_pids()[0], signal.SIGKILL)
        assert slow.result(timeout=30).error.startswith("sandbox failure")
        again = pool.submit(Program("import time\ndef nap():\n    time.sleep(5)\n",
                                    ("assert nap() is None",))).result(timeout=30)
        assert not again.cached and again.tests[0].status == "timeout"


def _children(pid):
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                found += [int(child) for child in handle.read().split()]
        except OSError:
            continue
    return found


def test_dead_judge_is_restarted_by_its_slot(fast_limits):
    # The judge is the slot's child in the slot's own session (candidates start new
    # ones). Killed mid-program it leaves unread messages behind: the slot must see a
    # dead judge, not crash on the reset connection.
    with SandboxPool(num_workers=1, limits=fast_limits) as pool:
        slot_pid, python_pid = pool.slot_pids()[0], pool.slot_python_pids()[0]
        slow = pool.submit(Program("import time\ndef nap():\n    time.sleep(5)\n",
                                   ("assert nap() is None",)))
        time.sleep(0.5)
        judges = [p for p in _children(python_pid) if os.getsid(p) == os.getsid(python_pid)
                  and _no_capabilities(p)]  # the zygote keeps the slot's
        assert len(judges) == 1
        os.kill(judges[0], signal.SIGKILL)
        broken = slow.result(timeout=30)
        assert broken.error == "sandbox failure: the judge process died", broken
        assert pool.replaced_slots == 0 and pool.slot_pids() == [slot_pid]
        assert all(r.passed for r in pool.run_batch([GOOD] * 2))


def _no_capabilities(pid):
    with open(f"/proc/{pid}/status") as handle:
        return "CapEff:\t0000000000000000" in handle.read()


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


def test_replaced_slot_leaves_no_candidate_processes(fast_limits):
    # A candidate's children run in sessions of their own and without a
    # parent-death signal: killing the slot's process group misses them, so
    # replacing the slot must sweep them by their per-run uid.
    limits = Limits(wall_s_per_test=20.0, wall_s_total=30.0, cpu_s=5.0,
                    memory_bytes=384 << 20, max_processes=4)
    code = ("import os, time\ndef spawn():\n    for _ in range(3):\n"
            "        if os.fork() == 0:\n            os.setsid()\n            while True:\n"
            "                time.sleep(0.05)\n    time.sleep(30)\n")
    with SandboxPool(num_workers=1, limits=limits) as pool:
        if pool.isolation.users == "shared-uid" and not pool.isolation.pid_namespace:
            pytest.skip("no per-run uid and no PID namespace: nothing to sweep them by")
        slot_pid, python_pid = pool.slot_pids()[0], pool.slot_python_pids()[0]
        running = pool.submit(Program(code, ("assert spawn() is None",)))
        escaped = []
        deadline = time.monotonic() + 10.0
        while len(escaped) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
            # Session leaders only: where the zygote arms the next candidate through
            # a short-lived intermediate, that is a grandchild of the slot too.
            escaped = [g for c in _children(python_pid) for g in _children(c) if _leads(g)]
        assert len(escaped) == 3
        os.killpg(slot_pid, signal.SIGKILL)  # the slot dies; its candidate with it
        assert running.result(timeout=30).error.startswith("sandbox failure")
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and any(_alive(p) for p in escaped):
            time.sleep(0.05)
        assert not [p for p in escaped if _alive(p)]
        assert pool.replaced_slots == 1 and pool.submit(GOOD).result().passed


def _leads(pid: int) -> bool:
    try:
        return os.getsid(pid) == pid
    except OSError:
        return False


NAP = Program("import time\ndef nap():\n    time.sleep(5)\n", ("assert nap() is None",))


def test_program_queued_behind_a_broken_one_still_runs(fast_limits):
    # Both are in the slot's pipeline when it dies: the second goes back to the
    # queue (its future already running) and runs in the replacement.
    with SandboxPool(num_workers=1, limits=fast_limits) as pool:
        slow, queued = pool.submit(NAP), pool.submit(GOOD)
        time.sleep(0.3)
        os.killpg(pool.slot_pids()[0], signal.SIGKILL)
        assert slow.result(timeout=30).error.startswith("sandbox failure")
        assert queued.result(timeout=30).passed


def test_slot_that_cannot_restart_fails_its_programs(fast_limits, monkeypatch):
    with SandboxPool(num_workers=1, limits=fast_limits) as pool:
        def cannot_start(*args, **kwargs):
            raise OSError("no slot can start")

        monkeypatch.setattr(pool_module, "SlotClient", cannot_start)
        monkeypatch.setattr(pool_module, "RESTART_BACKOFF_S", 0.01)
        slow, queued = pool.submit(NAP), pool.submit(GOOD)
        time.sleep(0.3)
        os.killpg(pool.slot_pids()[0], signal.SIGKILL)
        assert slow.result(timeout=30).error.startswith("sandbox failure")
        for future in (queued, pool.submit(GOOD)):  # queued, and submitted afterwards
            result = future.result(timeout=30)
            assert not result.passed and "could not be restarted" in result.error, result
            assert "no slot can start" in result.error
