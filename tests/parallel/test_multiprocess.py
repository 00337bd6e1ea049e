"""Two processes on 127.0.0.1 joined by jax.distributed (gloo CPU collectives), two
devices each, every process feeding half of the rows: three train steps match one
process holding the whole batch, and the checkpoint both processes wrote restores in a
single process."""

import numpy as np
import pytest

from tests.parallel.workers import assert_same_run, params_of, run_cluster, run_worker


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cluster")
    # "@tree": the trainer's default packing, whose host-side packer first gathers the
    # rows that the processes hold (minibatch.host_rows).
    cluster = run_cluster(tmp / "cluster.npz", ("2,2,1@tree", "2,2,1"), "--save",
                          tmp / "ckpt")
    single = run_worker(tmp / "single.npz", ("none", "none@tree"), devices=1)
    return cluster, single, tmp / "ckpt"


def test_two_processes_match_one(runs):
    cluster, single, _ = runs
    assert_same_run(single, "none", cluster, "2,2,1")


def test_two_processes_match_one_with_tree_packing(runs):
    cluster, single, _ = runs
    assert_same_run(single, "none@tree", cluster, "2,2,1@tree")


def test_two_process_checkpoint_restores_in_one_process(runs, tmp_path):
    cluster, _, ckpt = runs
    restored = run_worker(tmp_path / "restored.npz", ("none",), "--restore", ckpt, devices=1)
    saved, got = params_of(cluster, "2,2,1"), params_of(restored, "none")
    assert saved.keys() == got.keys() and saved
    for name in saved:
        np.testing.assert_array_equal(got[name], saved[name], err_msg=name)
