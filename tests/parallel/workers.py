"""Launching steps_worker.py subprocesses: simulated CPU devices (XLA_FLAGS) and
jax.distributed clusters on 127.0.0.1, which the pytest process (jax already
started with one device) cannot become itself."""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WORKER = HERE / "steps_worker.py"
TIMEOUT_S = 400


def worker_env(devices: int) -> dict:
    """The test session's environment (its XLA compile flags, tests/conftest.py, and
    compilation cache included) with `devices` simulated CPU devices."""
    inherited = [f for f in os.environ.get("XLA_FLAGS", "").split()
                 if not f.startswith("--xla_force_host_platform_device_count")]
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT), XLA_FLAGS=" ".join(
        inherited + [f"--xla_force_host_platform_device_count={devices}"]))
    env.pop("PYTEST_XDIST_WORKER", None)
    return env


def worker_args(out, meshes, *extra, script=WORKER) -> list[str]:
    args = [sys.executable, str(script), "--out", str(out)]
    for mesh in meshes:
        args += ["--mesh", mesh]
    return args + [str(e) for e in extra]


def run_worker(out, meshes, *extra, devices: int = 1, script=WORKER) -> dict[str, np.ndarray]:
    """Runs one worker process (steps_worker.py or `script`); returns its .npz."""
    done = subprocess.run(worker_args(out, meshes, *extra, script=script), env=worker_env(devices),
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    if done.returncode:
        raise AssertionError(f"worker failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return dict(np.load(out))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_cluster(out, meshes, *extra, processes: int = 2, devices_per_process: int = 2,
                script=WORKER) -> dict[str, np.ndarray]:
    """`processes` workers joined by jax.distributed on 127.0.0.1 (gloo collectives);
    process 0's results."""
    coordinator = f"127.0.0.1:{free_port()}"
    procs = []
    for p in range(processes):
        args = worker_args(out if p == 0 else f"{out}.{p}", meshes, *extra,
                           "--coordinator", coordinator, "--num_processes", processes,
                           "--process_id", p, script=script)
        procs.append(subprocess.Popen(args, env=worker_env(devices_per_process),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    errors = []
    for p, proc in enumerate(procs):
        try:
            _, stderr = proc.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, stderr = proc.communicate()
        if proc.returncode:
            errors.append(f"process {p} failed ({proc.returncode}):\n{stderr[-3000:]}")
    if errors:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        raise AssertionError("\n".join(errors))
    return dict(np.load(out))


def params_of(results: dict, mesh: str) -> dict[str, np.ndarray]:
    prefix = f"{mesh}/param"
    return {k[len(prefix):]: v for k, v in results.items() if k.startswith(prefix)}


def assert_same_run(ref: dict, ref_mesh: str, got: dict, got_mesh: str) -> None:
    """Losses and gradient norms of the three steps, and the final parameters, agree
    to float32 reduction-order noise (Adam divides by sqrt(v), so 3 steps at lr 1e-2
    move parameters by up to ~1e-5 for gradient differences of ~1e-7)."""
    np.testing.assert_allclose(got[f"{got_mesh}/losses"], ref[f"{ref_mesh}/losses"],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[f"{got_mesh}/grad_norms"], ref[f"{ref_mesh}/grad_norms"],
                               rtol=1e-5, atol=1e-6)
    a, b = params_of(ref, ref_mesh), params_of(got, got_mesh)
    assert a.keys() == b.keys() and a
    for name in a:
        np.testing.assert_allclose(b[name], a[name], atol=5e-5, err_msg=name)
