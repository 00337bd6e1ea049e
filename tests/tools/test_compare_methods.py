"""compare_methods.py: arms are plain overrides, one warm start per seed, and the
summary's statistics and table come from the runs' own numbers."""

import pytest

from tools import compare_methods as compare


def test_dry_run_shares_one_warm_start_per_seed(tmp_path, capsys):
    compare.main(["--arms", "multi_turn,single_turn,mine=loss.kl_coef=0.1;train.ppo_epochs=2",
                  "--seeds", "0,1", "--steps", "7", "--root", str(tmp_path),
                  "--out", str(tmp_path / "c.json"), "--dry-run"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 + 3 * 2 and not (tmp_path / "c.json").exists()
    warm = [line for line in lines if line.startswith("[warm")]
    assert all("--config.train.steps=0" in line for line in warm)
    for line in lines[2:]:
        seed = line.split("]")[0].split()[-1]
        assert f"--config.train.init_from={tmp_path}/warm_seed{seed} " in line + " "
        assert "--config.train.steps=7" in line
    single = next(line for line in lines if line.startswith("[single_turn 1]"))
    assert "--config.rollout.num_turns=1 --config.rollout.num_generations=20" in single
    mine = next(line for line in lines if line.startswith("[mine 0]"))
    assert mine.endswith("--config.loss.kl_coef=0.1 --config.train.ppo_epochs=2")
    with pytest.raises(SystemExit, match="unknown arm 'nope'"):
        compare.parse_arms("multi_turn,nope")


def test_aggregate_and_table():
    runs = [{"arm": "a", "seed": 0, "test_success": 0.5, "step_time_s": 2.0},
            {"arm": "a", "seed": 1, "test_success": 1.0, "step_time_s": 4.0},
            {"arm": "b", "seed": 0, "error": "ValueError: config.credit.estimator: unknown"}]
    stats = compare.aggregate(runs)
    assert stats["a"]["test_success"] == {"mean": 0.75, "std": 0.25, "n": 2}
    assert stats["b"]["failed"] == ["ValueError: config.credit.estimator: unknown"]
    table = compare.markdown({"arms": stats, "overrides": {"a": [], "b": ["x=1"]}})
    assert "| a | (default) | 0.75 ± 0.25 |" in table and "3.0 ± 1.0" in table
    assert "| b | x=1 | failed: ValueError" in table
