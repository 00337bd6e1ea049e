"""No compile after warm-up: a packed minibatch runs in an already compiled, larger
(rows, bins, budget) layout (padding: same log-probabilities, loss and gradients) when
that costs at most layout_growth times its slots, and bins padded to the ladder
(train.bin_buckets) change no loss or gradient."""

import jax
import numpy as np
from flax import nnx

from mtrl.training.update.minibatch import take_rows
from mtrl.training.update.packing import pack_rows, packed_logprobs, pad_packed, reusable_layout
from mtrl.training.policy.train_state import init_train_state
from mtrl.training.update.train_step import make_train_step
from tests.training.update.test_packing import PPO_KL, models, recording_sgd, tree_minibatch  # noqa: F401


def test_reusable_layout_takes_the_cheapest_fit_within_the_growth():
    compiled = {(16, 8, 128), (16, 12, 128), (16, 6, 256), (32, 24, 128), (8, 4, 128)}
    assert reusable_layout((16, 6, 128), compiled, 2.0) == (16, 8, 128)
    assert reusable_layout((8, 6, 128), compiled, 2.0) == (16, 8, 128)  # rows are free
    assert reusable_layout((16, 12, 128), compiled, 2.0) == (16, 12, 128)
    assert reusable_layout((16, 3, 128), compiled, 2.0) is None  # 8 bins: 2.7x the slots
    assert reusable_layout((16, 5, 192), compiled, 2.0) == (16, 6, 256)
    assert reusable_layout((64, 8, 128), compiled, 2.0) is None  # more rows than any


def test_padded_layout_gives_the_same_logprobs(models):  # noqa: F811
    graphdef, params = models
    rows, _ = tree_minibatch("align", 2, models)
    packed = pack_rows(rows.tokens, rows.token_mask, rows.loss_mask, "tree")
    _, p, s = packed.tokens.shape
    padded = pad_packed(packed, p + 3, s + 64)
    model = nnx.merge(graphdef, params[0])
    got = packed_logprobs(model, jax.tree.map(lambda x: x[0], padded))
    want = packed_logprobs(model, jax.tree.map(lambda x: x[0], packed))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_smaller_packing_reuses_the_compiled_layout(models):  # noqa: F811
    graphdef, params = models
    rows, _ = tree_minibatch("cross", 2, models, seed=2)
    loss_mask = np.array(rows.loss_mask)
    trained = np.flatnonzero(loss_mask.any(axis=(0, 2)))
    loss_mask[:, trained[: len(trained) // 3]] = False  # fewer rows: fewer bins
    keep = np.arange(rows.tokens.shape[1] - 2)  # and a smaller rows shape
    fewer = take_rows(rows.replace(loss_mask=jax.numpy.asarray(loss_mask)), keep)
    full_shape = pack_rows(rows.tokens, rows.token_mask, rows.loss_mask, "rows").tokens.shape
    small_shape = pack_rows(fewer.tokens, fewer.token_mask, fewer.loss_mask, "rows").tokens.shape
    assert small_shape[1] < full_shape[1] <= 2 * small_shape[1]

    def fresh(growth=2.0):
        step = make_train_step(graphdef, PPO_KL, recording_sgd(), num_agents=2, shared=False,
                               packing="rows", layout_growth=growth)
        return step, init_train_state(params, recording_sgd(), shared=False,
                                      keep_reference=True)

    warm, state = fresh()
    warm(state, rows)
    _, state = fresh()
    _, reused = warm(state, fewer)
    assert warm.num_compiles == 1 and warm.padded_slots > 0
    assert warm.last_packing["bins"] == full_shape[1]
    alone, state = fresh(growth=1.0)
    _, want = alone(state, fewer)
    _, state = fresh()
    alone(state, rows)  # growth 1: more bins than compiled: a program of its own
    assert alone.num_compiles == 2 and alone.padded_slots == 0
    for name, value in jax.device_get(want).items():
        np.testing.assert_allclose(jax.device_get(reused)[name], value, rtol=1e-5, atol=1e-6,
                                   err_msg=name)


def test_bins_padded_to_the_ladder_change_no_loss_or_gradient(models):  # noqa: F811
    """Empty bins of a coarse ladder: the same metrics and gradients as the
    exact packing and as the unpacked rows (float32 summation order only)."""
    graphdef, params = models
    rows, _ = tree_minibatch("align", 2, models, seed=5)
    results = {}
    for packing, buckets in (("none", "none"), ("tree", "none"), ("tree", "16")):
        step = make_train_step(graphdef, PPO_KL, recording_sgd(), num_agents=2, shared=False,
                               packing=packing, bin_buckets=buckets, layout_growth=1.0)
        state = init_train_state(params, recording_sgd(), shared=False, keep_reference=True)
        new_state, metrics = step(state, rows)
        results[packing, buckets] = (jax.device_get(metrics),
                                     jax.device_get(new_state.opt_state), step.last_packing)
    exact, padded = results["tree", "none"][2], results["tree", "16"][2]
    assert exact["bins"] < padded["bins"] == 16
    assert padded["packed_tokens"] == exact["packed_tokens"]
    want_metrics, want_grads, _ = results["none", "none"]
    for key in (("tree", "none"), ("tree", "16")):
        metrics, grads, _ = results[key]
        assert set(metrics) == set(want_metrics)
        for name, want in want_metrics.items():
            np.testing.assert_allclose(metrics[name], want, rtol=1e-5, atol=1e-6,
                                       err_msg=f"{key} {name}")
        for got, want in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads)):
            np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-6, err_msg=str(key))
    assert np.abs(jax.tree.leaves(want_grads)[0]).max() > 0
