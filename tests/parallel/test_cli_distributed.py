"""mtrl.train's distributed flags: a bad combination is one line; two processes that
join a cluster and ask for a feature the multi-process loop does not run yet are
refused in one line (BUILD.md "Scale-out") instead of failing deep inside a step."""

import subprocess
import sys

import pytest

from tests.parallel.workers import ROOT, free_port, worker_env


def train(*args, devices=1, **popen):
    return subprocess.Popen([sys.executable, "-m", "mtrl.train", *args],
                            cwd=ROOT, env=worker_env(devices), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **popen)


def test_missing_coordinator_is_one_line(tmp_path):
    out, err = train("--num_processes=2", f"--workdir={tmp_path}").communicate(timeout=120)
    assert err.strip() == ("error: --num_processes/--process_id/--coordinator_address: "
                           "num_processes=2 needs coordinator_address 'host:port', got ''")


@pytest.mark.parametrize("override, error", [
    ("--config.train.off_policy=1", "error: config.train.off_policy: not supported with 2 "
     "processes yet (BUILD.md, Scale-out); run it in one process"),
    # The default's 3 tasks per step: refused at start-up, not after SFT.
    ("--config.train.tasks_per_step=3", "error: config.train.tasks_per_step: 3 tasks do not "
     "split evenly over 2 processes"),
])
def test_two_processes_refuse_what_they_do_not_run_in_one_line(tmp_path, override, error):
    coordinator = f"127.0.0.1:{free_port()}"
    procs = [train(f"--coordinator_address={coordinator}", "--num_processes=2",
                   f"--process_id={p}", f"--workdir={tmp_path / str(p)}", override)
             for p in range(2)]
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 1
        assert err.strip().splitlines()[-1] == error


def test_a_mesh_that_does_not_fit_the_model_fails_at_build(tmp_path):
    # 8 simulated devices; the default's model has 4 heads over 2 kv heads.
    proc = train("--config.mesh.shape=1,1,8", f"--workdir={tmp_path}", devices=8)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1
    assert err.strip().splitlines()[-1] == (
        "error: config.mesh.shape: tensor=8 does not divide the model's num_heads (4)")
    assert not (tmp_path / "checkpoints").exists() or not any(
        (tmp_path / "checkpoints").iterdir())
