"""No compile after warm-up in the packed update: the largest layout of a step's
minibatches is compiled (not run) by `UpdateStage.freeze(state)`, so after it a
minibatch larger than any run before still runs in a compiled layout; a packed update
runs on one row count whatever the tree's turns; the layouts met, saved and restored
into another train step, run its minibatches in the same layouts."""

import json
from types import SimpleNamespace

import jax
import numpy as np

from mtrl.rollout.config import RolloutConfig
from mtrl.training.update.packing import pack_rows
from mtrl.training.update.stage import UpdateStage, largest_layout, packed_row_count
from mtrl.training.policy.train_state import init_train_state
from mtrl.training.update.train_step import make_train_step
from tests.training.update.test_packing import PPO_KL, models, recording_sgd, tree_minibatch  # noqa: F401


def test_packed_row_count_is_the_untruncated_tree():
    tree = SimpleNamespace(config=RolloutConfig(num_turns=2, num_generations=4), num_tasks=3)
    assert packed_row_count(tree) == 64  # 4 x (3 + 3 x 4) = 60 completions
    three = SimpleNamespace(config=RolloutConfig(num_turns=3, num_generations=2), num_tasks=2)
    assert packed_row_count(three, 32) == 32  # 2 x (2 + 4 + 8) = 28


def test_the_largest_layout_holds_every_packing(models):  # noqa: F811
    rows, _ = tree_minibatch("cross", 2, models, seed=1)
    n, b, length = rows.tokens.shape
    most = largest_layout(b, length, 0, "1.25")
    for mode in ("rows", "tree"):
        shape = pack_rows(rows.tokens, rows.token_mask, rows.loss_mask, mode).tokens.shape
        assert shape[1] <= most[1] and shape[2] <= most[2]


def test_after_the_freeze_a_larger_minibatch_runs_in_the_precompiled_layout(models):  # noqa: F811
    graphdef, params = models
    rows, _ = tree_minibatch("cross", 2, models, seed=2)
    loss_mask = np.array(rows.loss_mask)
    trained = np.flatnonzero(loss_mask.any(axis=(0, 2)))
    loss_mask[:, trained[: len(trained) // 2]] = False  # the warm-up's: fewer rows, bins
    fewer = rows.replace(loss_mask=jax.numpy.asarray(loss_mask))

    def fresh():
        step = make_train_step(graphdef, PPO_KL, recording_sgd(), num_agents=2, shared=False,
                               packing="rows", layout_growth=1.0)
        updater = UpdateStage(step, 1, 1, False, 1, lambda step: jax.random.key(step))
        return updater, init_train_state(params, recording_sgd(), shared=False,
                                         keep_reference=True)

    updater, state = fresh()
    state, _ = updater.step_fn(state, fewer)  # the warm-up's own layout
    assert updater.step_fn.num_compiles == 1
    updater.row_shapes.add(rows.tokens.shape)
    updater.freeze(state)
    assert updater.step_fn.num_compiles == 2  # the largest layout: compiled, not run
    _, state = fresh()
    _, got = updater.step_fn(state, rows)  # more bins than the warm-up ran
    assert updater.step_fn.num_compiles == 2
    most = largest_layout(*rows.tokens.shape[1:], 0, updater.step_fn.bin_buckets)
    assert updater.step_fn.last_packing["bins"] == most[1]
    # Unfrozen, the same minibatch compiles a layout of its own: same loss and gradients.
    alone, state = fresh()
    _, want = alone.step_fn(state, rows)
    assert alone.step_fn.last_packing["bins"] < most[1]
    for name, value in jax.device_get(want).items():
        np.testing.assert_allclose(jax.device_get(got)[name], value, rtol=1e-5, atol=1e-6,
                                   err_msg=name)


def test_restored_layouts_run_a_minibatch_where_the_saved_step_ran_it(models):  # noqa: F811
    """A resumed run's update: the layouts (through JSON, as a checkpoint's extra holds
    them) and frozen, a minibatch runs in the layout the saving step runs it in, with
    the same loss and gradients bit for bit; without them, in a layout of its own."""
    graphdef, params = models
    rows, _ = tree_minibatch("cross", 2, models, seed=2)
    loss_mask = np.array(rows.loss_mask)
    trained = np.flatnonzero(loss_mask.any(axis=(0, 2)))
    loss_mask[:, trained[: len(trained) // 2]] = False
    fewer = rows.replace(loss_mask=jax.numpy.asarray(loss_mask))

    def fresh():
        step = make_train_step(graphdef, PPO_KL, recording_sgd(), num_agents=2, shared=False,
                               packing="rows", layout_growth=1.0)
        return step, init_train_state(params, recording_sgd(), shared=False,
                                      keep_reference=True)

    saving, state = fresh()
    updater = UpdateStage(saving, 1, 1, False, 1, lambda step: jax.random.key(step))
    updater.step_fn(state, fewer)  # the warm-up's own layout
    updater.row_shapes.add(rows.tokens.shape)
    updater.freeze(state)  # and the largest
    saved = json.loads(json.dumps(saving.layouts()))
    assert len(saved) == 2 and all(len(layout) == 5 for layout in saved)
    resumed, _ = fresh()
    resumed.restore_layouts(saved)
    resumed.freeze_layouts()
    assert resumed.layouts() == saving.layouts()
    unrestored, _ = fresh()
    unrestored.freeze_layouts()
    results = {}
    for name, step in (("saving", saving), ("resumed", resumed), ("unrestored", unrestored)):
        _, state = fresh()
        state, metrics = step(state, rows)
        results[name] = (step.last_packing["bins"], jax.device_get((metrics, state.params)))
    (bins, want), (got_bins, got) = results["saving"], results["resumed"]
    assert got_bins == bins > results["unrestored"][0]
    for name, value in want[0].items():
        np.testing.assert_array_equal(got[0][name], value, err_msg=name)
    for a, b in zip(jax.tree.leaves(got[1]), jax.tree.leaves(want[1])):
        np.testing.assert_array_equal(a, b)
