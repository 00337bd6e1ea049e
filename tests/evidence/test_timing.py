"""mtrl/evidence/timing.py, the one timer of the benchmarks: it hands back the call's
result with wall and CPU seconds, and every benchmark that times a call uses it."""

import pathlib

import pytest

from mtrl.evidence import timing

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"


def busy(n: int) -> int:
    return sum(i * i for i in range(n))


def test_timed_returns_the_result_and_counts_this_process_cpu():
    result, record = timing.timed(lambda: busy(300_000))
    assert result == busy(300_000)
    assert set(record) == {"wall_s", "cpu_s", "load1"}
    assert record["cpu_s"] > 0 and record["wall_s"] > 0  # it ran here, on this process
    assert timing.wall_seconds(lambda: busy(1000)) >= 0


def test_a_failing_call_raises_instead_of_timing_nothing():
    with pytest.raises(ZeroDivisionError):
        timing.timed(lambda: 1 / 0)


@pytest.mark.parametrize("name", ["tunix", "update_bf16", "decode", "lora", "sampler", "envs",
                                  "rollout"])
def test_the_benchmarks_time_calls_with_it(name):
    source = (BENCH / f"{name}.py").read_text()
    assert "from mtrl.evidence import timing" in source or "mtrl.evidence.timing" in source
    assert "os.times()" not in source and "time.process_time()" not in source
