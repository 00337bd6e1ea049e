"""tools/run_default.py's numbers over seeds: the test gains of the chosen and the
last checkpoint with their 95% t intervals (hand-computed), and the validation/test
correlation."""

import json
import sys

import pytest

from tools import run_default


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


def finished_run(directory, seed, code, config=None):
    directory.mkdir(parents=True)
    summary = {"final_best_success": 0.5, "post_sft_success": 0.1, "test_success": 0.4,
               "post_sft_test_success": 0.1, "minutes": 1.0, "steps": 2,
               "turn1_success": 0.1, "turn2_success": 0.5,
               "provenance": {"code": code, "mixed_code": False}}
    (directory / "summary.json").write_text(json.dumps(summary))
    (directory / "config.json").write_text(json.dumps(config or {"seed": seed, "lr": 1}))
    (directory / "metrics.jsonl").write_text(json.dumps({"step": 1, "reward_mean": 0.2}) + "\n")


def test_adopted_runs_must_share_one_code_state_and_config(tmp_path, monkeypatch):
    code = {"commit": "a" * 40, "dirty": False, "diff_sha256": None}
    for seed in (0, 1):
        finished_run(tmp_path / f"s{seed}", seed, code)
    out = tmp_path / "out.json"

    def main(*adopts):
        monkeypatch.setattr(sys, "argv", ["run_default.py", "--seeds", "", "--out", str(out),
                                          *(f"--adopt={a}" for a in adopts)])
        run_default.main()
        return json.loads(out.read_text())

    record = main(f"1={tmp_path / 's1'}", f"0={tmp_path / 's0'}")
    assert record["seeds"] == [0, 1] and record["runs"][0]["curve"] == [
        {"step": 1, "reward_mean": 0.2}]
    assert record["runs"][1]["test_gain"] == pytest.approx(0.3)
    finished_run(tmp_path / "other_code", 2, dict(code, commit="b" * 40))
    with pytest.raises(SystemExit, match="seed 2 .*its commit differs"):
        main(f"0={tmp_path / 's0'}", f"2={tmp_path / 'other_code'}")
    finished_run(tmp_path / "other_config", 3, code, {"seed": 3, "lr": 2})
    with pytest.raises(SystemExit, match="seed 3 .*config differs"):
        main(f"0={tmp_path / 's0'}", f"3={tmp_path / 'other_config'}")
    with pytest.raises(SystemExit, match="it ran seed 0"):
        main(f"0={tmp_path / 's0'}", f"4={tmp_path / 's0'}")


def stopped_run(directory, seed, checks, config=None):
    directory.mkdir(parents=True)
    config = config or {"seed": seed, "lr": 1, "sft": {"check_rounds": 2}}
    (directory / "config.json").write_text(json.dumps(config))
    lines = [{"tag": "sft/agent0", "step": 25, "loss": 0.5}]
    lines += [{"tag": "sft_check/agent0", "step": 300 + 100 * r, "exact": e, "rows": 100.0,
               "min_exact": 0.25, "phase": 0.0, "round": float(r), "passed": float(e >= 0.25)}
              for r, e in enumerate(checks)]
    (directory / "sft.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_a_run_the_warm_start_check_stopped_counts_with_gain_zero(tmp_path, monkeypatch):
    code = {"commit": "a" * 40, "dirty": False, "diff_sha256": None}
    config = {"seed": 0, "lr": 1, "sft": {"check_rounds": 2}}
    finished_run(tmp_path / "s0", 0, code, config)
    stopped_run(tmp_path / "s1", 1, [0.0, 0.0, 0.1])
    out = tmp_path / "out.json"

    def main(*flags):
        monkeypatch.setattr(sys, "argv", ["run_default.py", "--seeds", "", "--out", str(out),
                                          *flags])
        run_default.main()
        return json.loads(out.read_text())

    record = main(f"--adopt=0={tmp_path / 's0'}", f"--stopped=1={tmp_path / 's1'}")
    assert record["stopped_by_warm_start_check"] == [1]
    assert record["runs"][1]["test_gain"] == 0.0
    assert "agent0 reproduced 0.10 of 100" in record["runs"][1]["stopped"]
    # the mean counts the stopped seed: (0.3 + 0) / 2
    assert record["over_seeds"]["test_gain"]["mean"] == pytest.approx(0.15)
    assert record["targets_met"]["every_test_gain_ge_0.25"] is False
    # a run whose check passed, or that had rounds left, was not stopped by it
    stopped_run(tmp_path / "passed", 2, [0.0, 0.3], dict(config, seed=2))
    with pytest.raises(SystemExit, match="did not fail in the last round"):
        main(f"--adopt=0={tmp_path / 's0'}", f"--stopped=2={tmp_path / 'passed'}")
    stopped_run(tmp_path / "early", 3, [0.0, 0.0], dict(config, seed=3))
    with pytest.raises(SystemExit, match="did not fail in the last round"):
        main(f"--adopt=0={tmp_path / 's0'}", f"--stopped=3={tmp_path / 'early'}")
    stopped_run(tmp_path / "other", 4, [0.0, 0.0, 0.0], dict(config, seed=4, lr=2))
    with pytest.raises(SystemExit, match="seed 4 .*config differs"):
        main(f"--adopt=0={tmp_path / 's0'}", f"--stopped=4={tmp_path / 'other'}")
