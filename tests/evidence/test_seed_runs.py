"""seed_runs: the per-seed scripts' command line, trainer call (subprocess stubbed) and
RL-step time split, against hand-computed values."""

import json
import subprocess
import sys

import pytest

from mtrl.evidence.seed_runs import (parse_seed_run_args, run_trainer, step_time_split,
                                              write_seed_summary)


def test_step_time_split_is_the_median_over_the_records_that_log_each_part():
    records = [{"time/rollout_s": 3.0, "time/env_s": None, "time/update_s": 1.0},
               {"time/rollout_s": 1.0, "time/env_s": 0.5},
               {"time/rollout_s": 2.0, "time/env_s": 0.7},
               {"heldout_success": 0.5}]
    # rollout: median(3, 1, 2) = 2; env: median(0.5, 0.7) = 0.6; update: median(1) = 1.
    out = step_time_split(records)
    assert out == {"step_rollout_s": 2.0, "step_env_s": pytest.approx(0.6),
                   "step_update_s": 1.0}
    assert step_time_split([]) == dict.fromkeys(out)


def test_parse_seed_run_args_defaults_and_repeated_overrides():
    args = parse_seed_run_args("d", "workdir/x", ["--out", "o.json", "--override=--a=1",
                                                  "--override=--b=2"])
    assert (args.seeds, args.out, args.workdir_root) == ("0", "o.json", "workdir/x")
    assert args.override == ["--a=1", "--b=2"]
    with pytest.raises(SystemExit):
        parse_seed_run_args("d", "workdir/x", [])  # --out is required


def test_run_trainer_empties_the_seed_workdir_and_reads_the_summary(tmp_path, monkeypatch):
    stale = tmp_path / "seed3" / "old.txt"
    stale.parent.mkdir()
    stale.write_text("from an earlier run")
    calls = []

    def fake_run(command, check, cwd):
        calls.append((command, check, cwd))
        assert not stale.exists()
        (tmp_path / "seed3" / "summary.json").write_text(json.dumps({"minutes": 1.5}))

    monkeypatch.setattr(subprocess, "run", fake_run)
    run = run_trainer(3, tmp_path, ["--noprogress", "--config.seed=5"], cwd=tmp_path,
                      config="c.py")
    workdir = tmp_path / "seed3"
    assert calls == [([sys.executable, "-m", "mtrl.train", "--config=c.py",
                       f"--workdir={workdir}", f"--out={workdir / 'summary.json'}",
                       "--config.seed=3", "--noprogress", "--config.seed=5"], True, tmp_path)]
    assert run.summary == {"minutes": 1.5} and run.workdir == workdir
    assert run.wall_minutes >= 0
    run_trainer(3, tmp_path, [], cwd=tmp_path)  # no config: the embedded default
    assert not any(c.startswith("--config=") for c in calls[-1][0])


def test_a_single_run_repeats_its_keys_at_the_top_level(tmp_path):
    summary = {"seeds": [0], "runs": [{"seed": 0, "gain": 0.3, "runs": "not shown"}]}
    write_seed_summary(tmp_path / "one.json", summary, summary["runs"])
    assert json.loads((tmp_path / "one.json").read_text()) == {**summary, "seed": 0, "gain": 0.3}
    assert list(summary) == ["seeds", "runs"]  # the caller's summary is left as it was
    runs = [{"seed": 0}, {"seed": 1}]
    write_seed_summary(tmp_path / "two.json", {"runs": runs}, runs)
    assert json.loads((tmp_path / "two.json").read_text()) == {"runs": runs}
