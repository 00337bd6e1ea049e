"""The judge's work is bounded by the candidate's limits.

A candidate limited to 256 MiB made the judge peak at 0.8-1.3 GB with one forged
32 MiB reply frame; a returned range(15_000_000) that a test passed to set() was
built in C code where the per-test alarm never fires; a forged hello bound a global
(a set of hash-colliding integers) outside every per-test timer, stalling the judge
for the whole program limit. Frames and every decoded container are now bounded by
the candidate's memory limit, the hello is decoded and bound under the per-test
timer, and a judge stuck in C code past the per-test limit is killed by its own
CPU limit: each verdict below is a non-pass that names the bound.
"""

from mtrl.envs.sandbox import Limits, Program, SandboxPool, codec

LIMITS = Limits(wall_s_per_test=1.0, wall_s_total=30.0, cpu_s=20.0, memory_bytes=256 << 20)


def _forged_hello(value_json: str) -> str:
    """Candidate code that writes a hello frame of its own making to the judge (fd 3)
    and then never says its real hello."""
    return ("import os, struct, time\n"
            f"payload = ('{{\"names\": {{\"x\": [\"value\", ' + {value_json} + ']}}}}').encode()\n"
            "data = struct.pack('>I', len(payload)) + payload\n"
            "while data:\n    data = data[os.write(3, data):]\n"
            "time.sleep(60)\n")


def _run(program: Program):
    with SandboxPool(num_workers=1, limits=LIMITS) as pool:
        result = pool.submit(program).result()
        after = pool.submit(Program("def f():\n    return 1\n", ("assert f() == 1",))).result()
    assert after.passed, after  # the pool judges the next program normally
    return result


def test_a_frame_beyond_the_candidates_memory_share_is_refused():
    count = 3_000_000  # about 6 MB of JSON: under the old 32 MiB cap
    assert codec.frame_limit(LIMITS.memory_bytes) < 2 * count
    result = _run(Program(_forged_hello(f"'[' + ','.join(['0'] * {count}) + ']'"),
                          (f"assert len(x) == {count}",)))
    assert not result.passed and "exceeds" in result.tests[0].message, result.tests


def test_a_returned_range_beyond_the_item_budget_is_refused():
    count = 3_000_000
    assert codec.item_budget(LIMITS.memory_bytes) < count
    result = _run(Program(f"def f():\n    return range({count})\n",
                          (f"assert len(set(f())) == {count}", "assert list(f()[:3]) == [0, 1, 2]")))
    assert result.tests[0].status == "error" and "items" in result.tests[0].message, result.tests
    small = _run(Program("def f():\n    return range(5)\n", ("assert set(f()) == {0, 1, 2, 3, 4}",)))
    assert small.passed, small.tests


def test_a_forged_hello_decodes_under_the_per_test_timer():
    count = 60_000  # hash-colliding integers: quadratic to put in a set
    colliding = f"'{{\"$set\": [' + ','.join(str(k * (2 ** 61 - 1)) for k in range({count})) + ']}}'"
    result = _run(Program(_forged_hello(colliding), (f"assert len(x) == {count}",)))
    assert result.tests[0].status == "timeout", result.tests
    assert "candidate's names" in result.tests[0].message, result.tests


def test_a_judge_stuck_in_c_code_is_killed_by_its_own_cpu_limit():
    result = _run(Program("def f():\n    return 10 ** 12\n", ("assert sum(range(f())) > 0",)))
    assert result.tests[0].status == "timeout", result.tests
    assert "judge" in result.tests[0].message and "CPU" in result.tests[0].message, result.tests
    assert not result.error.startswith("sandbox failure"), result.error


def test_a_judge_out_of_memory_is_replaced_and_its_verdict_never_cached(tmp_path):
    # 5 GB asked of a judge whose address space is capped at 4 GiB: MemoryError at
    # once. The judge may be left in a broken state and the host's memory may be
    # what ran out, so the slot replaces it and the verdict is not cached.
    from mtrl.envs.sandbox.cache import ResultCache, cache_key
    program = Program("def f():\n    return 5\n", ("assert len(bytes(f()) * 10 ** 9) > 0",))
    cache_path = tmp_path / "verdicts.sqlite"
    with SandboxPool(num_workers=1, limits=LIMITS, cache_path=cache_path) as pool:
        isolation = pool.cache_isolation
        result = pool.submit(program).result()
        after = pool.submit(Program("def f():\n    return 1\n", ("assert f() == 1",))).result()
    assert result.tests[0].error_type == "MemoryError", result.tests
    assert result.error.startswith("sandbox failure") and after.passed, (result, after)
    cache = ResultCache(cache_path)
    try:
        assert cache.get(cache_key(program, LIMITS, isolation)) is None
    finally:
        cache.close()
