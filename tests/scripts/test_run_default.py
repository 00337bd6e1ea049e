"""scripts/run_default.py's numbers over seeds: the test gains of the chosen and the
last checkpoint with their 95% t intervals (hand-computed), and the validation/test
correlation."""

import pathlib

import pytest

from mtrl.training.config import module_from_file

run_default = module_from_file(pathlib.Path(__file__).resolve().parents[2] / "scripts"
                               / "run_default.py")


def test_over_seeds_gives_gain_intervals_and_the_correlation():
    runs = [{"final_best_success": v, "test_success": t, "test_gain": t - 0.1,
             "last_test_gain": g, "minutes": 1.0}
            for v, t, g in ((0.5, 0.4, 0.1), (0.7, 0.6, 0.2), (0.9, 0.9, 0.3))]
    out = run_default.over_seeds(runs)
    # test_gain = (0.3, 0.5, 0.8): mean 0.5333, s = 0.2517, t(0.975, 2) = 4.3027.
    low, high = out["ci95"]["test_gain"]
    assert (low + high) / 2 == pytest.approx(0.5333, abs=1e-4)
    assert (high - low) / 2 == pytest.approx(4.3027 * 0.25166 / 3 ** 0.5, abs=1e-3)
    assert out["ci95"]["last_test_gain"] == pytest.approx([0.2 - 0.2484, 0.2 + 0.2484],
                                                          abs=1e-3)
    assert out["validation_test_correlation"] == pytest.approx(0.9934, abs=1e-3)
    assert out["stats"]["test_gain"]["mean"] == pytest.approx(0.5333, abs=1e-4)
    assert "validation_test_correlation" not in run_default.over_seeds(runs[:2])
