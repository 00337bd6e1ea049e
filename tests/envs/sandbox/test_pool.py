"""Pool behaviour: ordering, futures, validation, survival of killed slots."""

import concurrent.futures
import os
import signal
import time

import pytest

from mtrl.envs.sandbox import Limits, Program, SandboxPool, network_isolation

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
    assert pool.isolation.network == network_isolation()
    assert pool.isolation.users in ("per-process-uid", "shared-uid")
    if os.geteuid() == 0:
        assert pool.isolation.users == "per-process-uid"


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
