"""The exchanges of a multi-process training step between two processes on
127.0.0.1 (jax.distributed, gloo), with shares of different sizes: rows gathered in
process order with padding rows, an evaluation split 2 + 1 reduced to the mean over
all tasks, metrics averaged over processes."""

import numpy as np
import pytest

from tests.parallel.workers import HERE, run_cluster

SCRIPT = HERE / "host_worker.py"


@pytest.fixture(scope="module")
def got(tmp_path_factory):
    out = tmp_path_factory.mktemp("host") / "host.npz"
    return run_cluster(out, (), devices_per_process=1, script=SCRIPT)


def test_rows_of_different_counts_gather_in_process_order_with_padding(got):
    # Process 0 holds 2 rows (10, 11), process 1 holds 3 (20, 21, 22): each share is
    # padded to 3 rows with zero tokens and false masks.
    assert int(got["total"]) == 5
    assert got["tokens"].shape == (2, 6, 3)
    np.testing.assert_array_equal(got["tokens"][0, :, 0], [10, 11, 0, 20, 21, 22])
    np.testing.assert_array_equal(got["mask"][1, :, 2], [1, 1, 0, 1, 1, 1])


def test_evaluation_is_split_and_reduced_to_the_mean_over_all_tasks(got):
    np.testing.assert_array_equal(got["seen"], [1.0, 0.0])  # process 0's share: 2 of 3
    np.testing.assert_allclose(got["success"], 1 / 3)  # not the mean of means (1/4)
    np.testing.assert_allclose(got["reward"], 2 / 3)
    assert got["transcripts"].tolist() == ["process 0"]


def test_task_shares_and_metric_means(got):
    np.testing.assert_array_equal(got["share"], [0, 1])
    assert int(got["index"]) == 0
    np.testing.assert_allclose(got["reward_mean"], 0.5)
    np.testing.assert_allclose(got["success_turn1"], 0.5)
    # A name only process 1 reports is left out of the exchange (no deadlock).
    assert got["names"].tolist() == ["reward_mean", "train_success_turn1"]
