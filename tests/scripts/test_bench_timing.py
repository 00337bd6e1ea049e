"""scripts/bench_timing.py, the one timer of the benchmark scripts: it hands back the
call's result with wall and CPU seconds, and every script that times a call imports it."""

import pathlib
import sys

import pytest

SCRIPTS = pathlib.Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))
import bench_timing  # noqa: E402


def busy(n: int) -> int:
    return sum(i * i for i in range(n))


def test_timed_returns_the_result_and_counts_this_process_cpu():
    result, record = bench_timing.timed(lambda: busy(300_000))
    assert result == busy(300_000)
    assert set(record) == {"wall_s", "cpu_s", "load1"}
    assert record["cpu_s"] > 0 and record["wall_s"] > 0  # it ran here, on this process
    assert bench_timing.wall_seconds(lambda: busy(1000)) >= 0


def test_a_failing_call_raises_instead_of_timing_nothing():
    with pytest.raises(ZeroDivisionError):
        bench_timing.timed(lambda: 1 / 0)


@pytest.mark.parametrize("script", ["bench_tunix", "bench_update_bf16", "bench_decode",
                                    "bench_lora", "bench_sampler", "bench_envs"])
def test_the_benchmarks_time_calls_with_it(script):
    source = (SCRIPTS / f"{script}.py").read_text()
    assert "import bench_timing" in source
    assert "os.times()" not in source and "time.process_time()" not in source
