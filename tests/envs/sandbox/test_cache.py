"""The sqlite result cache: keys, identical hits, first writer wins, many writers."""

import dataclasses
import subprocess
import sys
import textwrap

import pytest

from mtrl.envs.sandbox import (ExecutionResult, Limits, Program, ResultCache, SandboxPool,
                               SyntaxErrorInfo, cache_key)
from mtrl.envs.sandbox import TestResult as Verdict  # not collected by pytest
from mtrl.envs.sandbox import cache as cache_module

PROGRAM = Program("def f(x):\n    return x\n", ("assert f(1) == 1",), setup="import math",
                  entry_point=None)
RESULT = ExecutionResult(tests=(Verdict("assert f(1) == 1", "failed", "AssertionError", "m"),),
                         syntax_error=SyntaxErrorInfo(3, 4, "bad"), stdout="out", stderr="err",
                         wall_s=0.25, error="")
ISOLATION = "jail=test; filter=0"


def test_key_is_deterministic_hex_sha256():
    key = cache_key(PROGRAM, Limits(), ISOLATION)
    assert key == cache_key(PROGRAM, Limits(), ISOLATION) and len(key) == 64 and int(key, 16) >= 0


@pytest.mark.parametrize("change", [
    lambda p, l: (dataclasses.replace(p, code=p.code + " "), l),
    lambda p, l: (dataclasses.replace(p, tests=p.tests + ("assert True",)), l),
    lambda p, l: (dataclasses.replace(p, setup=""), l),
    lambda p, l: (dataclasses.replace(p, entry_point="f"), l),
    lambda p, l: (p, dataclasses.replace(l, wall_s_per_test=2.0)),
    lambda p, l: (p, dataclasses.replace(l, memory_bytes=l.memory_bytes // 2)),
    lambda p, l: (p, dataclasses.replace(l, max_processes=1)),
])
def test_key_changes_with_every_input(change):
    program, limits = change(PROGRAM, Limits())
    assert cache_key(program, limits, ISOLATION) != cache_key(PROGRAM, Limits(), ISOLATION)


def test_key_changes_with_isolation():
    assert cache_key(PROGRAM, Limits(), ISOLATION) != cache_key(PROGRAM, Limits(),
                                                                "UNSAFE; " + ISOLATION)
    with pytest.raises(ValueError):
        cache_key(PROGRAM, Limits(), "")


def test_key_changes_with_harness_version(monkeypatch):
    before = cache_key(PROGRAM, Limits(), ISOLATION)
    monkeypatch.setattr(cache_module, "HARNESS_VERSION", "other")
    assert cache_key(PROGRAM, Limits(), ISOLATION) != before


def test_hit_returns_identical_result(tmp_path):
    cache = ResultCache(tmp_path / "c.sqlite")
    key = cache_key(PROGRAM, Limits(), ISOLATION)
    assert cache.get(key) is None
    cache.put(key, RESULT)
    hit = cache.get(key)
    assert hit == dataclasses.replace(RESULT, cached=True)
    other = dataclasses.replace(RESULT, stdout="different")
    cache.put(key, other)  # first writer wins: verdicts never change under a key
    assert cache.get(key) == hit and len(cache) == 1
    cache.close()
    reopened = ResultCache(tmp_path / "c.sqlite")
    assert reopened.get(key) == hit
    reopened.close()


WRITER = textwrap.dedent("""
    import sys
    from mtrl.envs.sandbox.cache import ResultCache
    from mtrl.envs.sandbox.types import ExecutionResult, TestResult
    path, writer = sys.argv[1], int(sys.argv[2])
    cache = ResultCache(path)
    for i in range(60):
        key = f"{i % 40:064x}"  # keys 0..39 are written by every process
        result = ExecutionResult(tests=(TestResult("t", "passed"),), stdout=f"w{writer}-{i}")
        cache.put(key, result)
        got = cache.get(key)
        assert got is not None and got.cached and got.stdout.startswith("w"), got
    cache.close()
""")


def test_concurrent_writers_from_several_processes(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, path, str(w)],
                                stderr=subprocess.PIPE, text=True) for w in range(4)]
    errors = [w.communicate(timeout=60)[1] for w in writers]
    assert [w.returncode for w in writers] == [0] * 4, errors
    cache = ResultCache(path)
    assert len(cache) == 40
    for i in range(40):
        stdout = cache.get(f"{i:064x}").stdout
        writer, index = stdout[1:].split("-")
        assert int(index) % 40 == i and 0 <= int(writer) < 4  # exactly one whole record
    cache.close()


def test_pool_serves_repeats_from_the_cache(tmp_path, fast_limits):
    program = Program("def f(x):\n    print('hi')\n    return x * 2\n",
                      ("assert f(2) == 4", "assert f(3) == 5"))
    with SandboxPool(num_workers=1, limits=fast_limits, cache_path=tmp_path / "p.sqlite") as pool:
        first = pool.submit(program).result()
        second = pool.submit(program).result()
        other_limits = pool.submit(program, dataclasses.replace(fast_limits, cpu_s=3.0)).result()
    assert not first.cached and second.cached and not other_limits.cached
    assert second == dataclasses.replace(first, cached=True)
    assert [t.status for t in first.tests] == ["passed", "failed"]
