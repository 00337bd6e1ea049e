"""The Trainer in two processes on 127.0.0.1 (jax.distributed, gloo; one CPU device
each, so the train step's mesh is data=2 across the processes): each process rolls
out one of the step's two tasks with its own sandbox pool, the update runs on both
processes' rows, and process 0 alone writes the logs. Two RL steps match one process
that grows the same trees (env_groups=2: the same per-group sampler keys) and trains
on the same global batch; the checkpoint both processes wrote restores in one
process."""

import json

import numpy as np
import pytest

from tests.parallel.trainer_worker import STEPS
from tests.parallel.workers import HERE, run_cluster, run_worker

SCRIPT = HERE / "trainer_worker.py"
# Float32 sums over the same tokens in another row order and another packing.
COMPARED = ("loss", "loss/agent0", "loss/agent1", "grad_norm/agent0", "grad_norm/agent1",
            "num_tokens", "reward_mean", "rollout/turn2_reward_mean")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trainer")
    cluster = run_cluster(tmp / "cluster.npz", (), "--workdir", tmp / "cluster",
                          devices_per_process=1, script=SCRIPT)
    single = run_worker(tmp / "single.npz", (), "--workdir", tmp / "single",
                        "--env_groups", 2, "--also_restore", tmp / "cluster", script=SCRIPT)
    return tmp, cluster, single


def params(results, prefix=""):
    """The final parameters a worker wrote (whole arrays, by key path)."""
    head = prefix + "param"
    return {k[len(head):]: v for k, v in results.items() if k.startswith(head)}


def metric_lines(workdir):
    return [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]


def test_process_zero_alone_logs_each_step_once(runs):
    tmp, _, _ = runs
    steps = [line["step"] for line in metric_lines(tmp / "cluster")]
    assert steps == list(range(STEPS + 1))  # step 0: the evaluation before training
    assert (tmp / "cluster" / "learning_curve.png").exists()


def test_two_processes_match_one(runs):
    tmp, cluster, single = runs
    got, want = metric_lines(tmp / "cluster"), metric_lines(tmp / "single")
    for g, w in zip(got[1:], want[1:]):
        assert g["grad_norm/agent0"] > 0  # the steps did train (non-zero advantages)
        for name in COMPARED:
            np.testing.assert_allclose(g[name], w[name], rtol=1e-5, atol=1e-6,
                                       err_msg=f"step {g['step']}: {name}")
    # Held-out evaluation, split one task per process and reduced: the same numbers.
    evaluated = [(g, w) for g, w in zip(got, want) if "heldout_success" in w]
    assert [w["step"] for _, w in evaluated] == [0, STEPS]
    for g, w in evaluated:
        held = sorted(k for k in w if k.startswith("heldout_"))
        assert held == sorted(k for k in g if k.startswith("heldout_"))
        np.testing.assert_allclose([g[k] for k in held], [w[k] for k in held], atol=1e-6,
                                   err_msg=f"step {w['step']}")
    a, b = params(single), params(cluster)
    assert a.keys() == b.keys() and a
    for name in a:
        np.testing.assert_allclose(b[name], a[name], atol=5e-5, err_msg=name)
    assert int(cluster["best_step"]) == int(single["best_step"])


def test_two_process_checkpoint_restores_in_one_process(runs):
    _, cluster, single = runs
    saved, restored = params(cluster), params(single, "restored/")
    assert saved.keys() == restored.keys() and saved
    for name in saved:
        np.testing.assert_array_equal(restored[name], saved[name], err_msg=name)
