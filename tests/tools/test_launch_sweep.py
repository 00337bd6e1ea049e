"""launch.py and sweep.py: the dry-run commands are exactly what would run (parsed
back with shlex), a grid expands to its product with one workdir per run, and the
summary table is built from the runs' own summary.json files."""

import json
import shlex

import pytest

from tools import launch, sweep


def test_tpu_dry_run_commands(capsys):
    launch.main(["tpu", "--name", "mtrl-v5e", "--zone", "us-west4-a", "--accelerator",
                 "v5litepod-16", "--workdir", "/mnt/runs/exp 1", "--dry-run", "--",
                 "--config.mesh.shape=4,4,1", "--config.train.steps=10"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5
    create, pack, scp, install, run = (shlex.split(line) for line in lines)
    assert create == ["gcloud", "compute", "tpus", "tpu-vm", "create", "mtrl-v5e",
                      "--zone=us-west4-a", "--accelerator-type=v5litepod-16",
                      "--version=" + launch.DEFAULT_TPU_VERSION]
    # Only what a worker needs is copied: no .venv, models/, workdirs or tests.
    assert pack[:2] == ["tar", "czf"] and pack[-3:] == ["setup.py", "mtrl", "experiments"]
    assert scp[:5] == ["gcloud", "compute", "tpus", "tpu-vm", "scp"]
    assert "--recurse" not in scp and scp[5] == pack[2]
    assert "--worker=all" in scp and "--worker=all" in install and "--worker=all" in run
    setup = install[-1]
    assert "python3 -m venv .venv && . .venv/bin/activate && pip install -e . 'jax[tpu]'" \
        in setup
    assert run[-1].split("&&")[1].strip() == ". .venv/bin/activate"  # the installed env
    remote = shlex.split(run[-1].split("=", 1)[1].split("&&", 2)[2])
    assert remote == ["python", "-m", "mtrl.train",
                      "--config=experiments/configs/default.py",
                      "--workdir=/mnt/runs/exp 1", "--progress=false", "--distributed_auto",
                      "--config.mesh.shape=4,4,1", "--config.train.steps=10"]


def test_gpu_commands_one_and_several_hosts():
    one = launch.gpu_commands(["localhost"], "c.py", "/w", ["--config.seed=1"])
    assert one == ["python -m mtrl.train --config=c.py --workdir=/w --progress=false "
                   "--config.seed=1"]
    two = launch.gpu_commands(["a", "b"], "c.py", "/w", [], port=999)
    assert [shlex.split(line)[:2] for line in two] == [["ssh", "a"], ["ssh", "b"]]
    for index, line in enumerate(two):
        cd, activate, command = shlex.split(line)[2].split("&&", 2)
        assert activate.strip() == ". .venv/bin/activate"  # the environment installed there
        remote = shlex.split(command)
        assert remote[-3:] == ["--coordinator_address=a:999", "--num_processes=2",
                               f"--process_id={index}"]
    with pytest.raises(ValueError, match="--hosts"):
        launch.gpu_commands([], "c.py", "/w", [])


def test_sweep_grid_dry_run(capsys, tmp_path):
    sweep.main(["--root", str(tmp_path), "--grid", "optim.learning_rate=1e-4,3e-4",
                "--grid", "seed=0,1,2", "--run", "loss.kl_coef=0.1;train.ppo_epochs=2",
                "--dry-run", "--", "--config.train.steps=5"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 * 3 + 1
    names = [line[1:line.index("]")] for line in lines]
    assert names[0] == "optim.learning_rate=1e-4,seed=0"
    assert names[-1] == "loss.kl_coef=0.1,train.ppo_epochs=2"
    args = shlex.split(lines[4].split("] ", 1)[1])
    assert args[1:3] == ["-m", "mtrl.train"]
    assert f"--workdir={tmp_path}/optim.learning_rate=3e-4,seed=1" in args
    assert args[-3:] == ["--config.optim.learning_rate=3e-4", "--config.seed=1",
                         f"--out={tmp_path}/optim.learning_rate=3e-4,seed=1/summary.json"]
    assert "--config.train.steps=5" in args
    assert not list(tmp_path.iterdir())  # a dry run writes nothing


def test_sweep_on_gpu_hosts_wraps_every_run(capsys, tmp_path):
    sweep.main(["--root", "/r", "--grid", "seed=0,1", "--launcher", "gpu",
                "--launcher-args=--hosts a,b", "--dry-run"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and all(line.split("] ")[1].startswith("ssh ") for line in lines)
    assert "--workdir=/r/seed=1" in lines[3] and "--process_id=1" in lines[3]


def test_bad_overrides_are_one_line():
    with pytest.raises(ValueError, match="not field.path=value"):
        sweep.expand(["learning_rate"], [])
    with pytest.raises(ValueError, match="nothing to run"):
        sweep.expand([], [])
    with pytest.raises(ValueError, match="same overrides"):
        sweep.expand(["seed=1,1"], [])


def test_summarize_tables_the_runs(tmp_path, capsys):
    (tmp_path / "seed=0").mkdir()
    (tmp_path / "seed=0" / "summary.json").write_text(json.dumps(
        {"minutes": 1.5, "final_best_success": 0.75, "best_step": 20}))
    code = sweep.main(["--root", str(tmp_path), "--grid", "seed=0,1", "--summarize"])
    out = capsys.readouterr().out.splitlines()
    assert code == 1  # seed=1 has no summary
    assert out[2].startswith("| seed=0 | 1.500 |") and "| 0.750 | 20 |" in out[2]
    assert out[3].endswith("| no summary.json |")
    rows = json.loads((tmp_path / "sweep.json").read_text())
    assert [r["run"] for r in rows] == ["seed=0", "seed=1"]
