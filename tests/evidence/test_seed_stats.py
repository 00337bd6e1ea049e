"""stats_over_seeds: mean, population std, min, max and count of each number over the
runs that report it, against hand-computed values."""

import pytest

from mtrl.evidence.seed_stats import stats_over_seeds


def test_population_std_over_the_runs_that_report_the_number():
    # x = 2, 4, 4, 4, 5, 5, 7, 9: mean 40/8 = 5; squared deviations 9+1+1+1+0+0+4+16 = 32,
    # population std sqrt(32/8) = 2 (the sample std would be sqrt(32/7) ≈ 2.14).
    runs = [{"x": x} for x in (2, 4, 4, 4, 5, 5, 7, 9)]
    # y only where present and not None: 0.5 and 1.0, mean 0.75,
    # std sqrt((0.25² + 0.25²)/2) = 0.25.
    runs[0]["y"], runs[1]["y"], runs[2]["y"] = 0.5, None, 1.0
    out = stats_over_seeds(runs, ("y", "x", "never"))
    assert list(out) == ["y", "x"]  # order of `names`; a number no run reports is left out
    assert out["x"] == {"mean": 5.0, "std": 2.0, "min": 2, "max": 9}
    assert list(out["x"]) == ["mean", "std", "min", "max"]
    assert out["y"] == {"mean": 0.75, "std": 0.25, "min": 0.5, "max": 1.0}


def test_chosen_stats_in_the_order_asked_and_one_run():
    runs = [{"t": 3.0}, {"t": 1.0}, {"error": "failed"}]
    out = stats_over_seeds(runs, ("t",), ("n", "mean", "std"))  # mean 2, std sqrt((1+1)/2)
    assert out == {"t": {"n": 2, "mean": 2.0, "std": 1.0}}
    assert list(out["t"]) == ["n", "mean", "std"]
    assert stats_over_seeds([{"t": 0.3}], ("t",))["t"] == {"mean": 0.3, "std": 0.0, "min": 0.3,
                                                            "max": 0.3}


def test_unknown_stat_is_refused():
    with pytest.raises(ValueError, match=r"stats must be one of mean, std, min, max, n, got 'median'"):
        stats_over_seeds([{"t": 1.0}], ("t",), ("mean", "median"))
