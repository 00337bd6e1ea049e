"""The bin-count ladder (train.bin_buckets): hand-checked rungs, one-line errors, the
backend's "auto", and a run replaying varying minibatches compiles at most one program
per rung (the step's real jit and trace counter; a trivial step body keeps it cheap)."""

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.training.update.buckets import (bucket_count, check_bin_buckets,
                                          check_layout_growth, ladder, resolve_layout)
from mtrl.training.update.minibatch import PolicyMinibatch
from mtrl.training.update.train_step import TrainStep


def test_ladders_by_hand():
    assert ladder("pow2", 100) == (1, 2, 4, 8, 16, 32, 64, 128)
    # ⌈1.5^k⌉: 1, ⌈1.5⌉, ⌈2.25⌉, ⌈3.375⌉, ⌈5.06⌉, ⌈7.59⌉, ⌈11.4⌉, ⌈17.1⌉, ⌈25.6⌉, ⌈38.4⌉
    assert ladder("1.5", 30) == (1, 2, 3, 4, 6, 8, 12, 18, 26, 39)
    assert ladder(3, 30) == (1, 3, 9, 27, 81)
    # √2^k lands a hair above 2, 4, 8: those are rungs, not 3, 5, 9.
    assert ladder(2 ** 0.5, 20) == (1, 2, 3, 4, 6, 8, 12, 16, 23)
    assert [bucket_count(n, "none") for n in (0, 1, 7, 300)] == [1, 1, 7, 300]
    assert [bucket_count(n, "1.5") for n in (0, 5, 7, 13)] == [1, 6, 8, 18]
    # ⌈1.25^k⌉ = 1, 2, 2, 2, 3, 4, 4, 5, 6, 8, 10, 12, 15, 19
    assert ladder("1.25", 15) == (1, 2, 3, 4, 5, 6, 8, 10, 12, 15)


@pytest.mark.parametrize("bad", ["1.0", "x", "", True, 0.5, 17, None, "auto "])
def test_bad_ladders_fail_in_one_line(bad):
    with pytest.raises(ValueError, match=r"^bin_buckets must be 'auto', 'none', 'pow2' or a "
                                         r"ratio in \(1, 16\] such as '1.5', got"):
        check_bin_buckets(bad)


@pytest.mark.parametrize("bad", [0.5, -1, True, "2", 20.0])
def test_bad_growths_fail_in_one_line(bad):
    with pytest.raises(ValueError, match=r"^layout_growth must be 0 \(the backend's\) or a "
                                         r"number in \[1, 16\], got"):
        check_layout_growth(bad)


def test_auto_is_the_backends_choice():
    assert resolve_layout("auto", 0, "cpu") == ("1.25", 1.0)
    assert resolve_layout("auto", 0.0, "gpu") == ("pow2", 2.0)
    assert resolve_layout("auto", 0, "tpu") == ("pow2", 2.0)
    assert resolve_layout("none", 1.5, "gpu") == ("none", 1.5)
    assert resolve_layout("2.5", 0, "cpu") == ("2.5", 1.0)


@flax.struct.dataclass
class _State:  # what TrainStep hands its program: a state with ref_params
    w: jax.Array
    ref_params: object = None


def _body(state, minibatch, packed):
    """A step whose compile costs milliseconds: the layout is what is compiled."""
    return state.replace(w=state.w + 1), {"nodes": jnp.sum(packed.token_mask)}


def _minibatches(rng, count=30, rows=24, length=40):
    """Rows of one agent, 6-39 tokens, a varying number of them trained (so the packing
    needs 1-12 bins of 64)."""
    out = []
    for _ in range(count):
        lengths = rng.integers(6, length, rows)
        token_mask = np.arange(length)[None, :] < lengths[:, None]
        trained = rng.random(rows) < rng.uniform(0.05, 1.0)
        loss_mask = token_mask & (np.arange(length)[None, :] >= 3) & trained[:, None]
        tokens = np.where(token_mask, rng.integers(1, 50, (rows, length)), 0)
        fields = dict(tokens=tokens, token_mask=token_mask, loss_mask=loss_mask,
                      old_logprobs=np.zeros((rows, length), np.float32),
                      advantages=loss_mask.astype(np.float32),
                      turn_index=loss_mask.astype(np.int32))
        out.append(PolicyMinibatch(**{k: jnp.asarray(v)[None] for k, v in fields.items()}))
    return out


def _replay(bin_buckets, growth, batches):
    step = TrainStep(_body, num_agents=1, shared=True, packing="rows", min_budget=64,
                     bin_buckets=bin_buckets, layout_growth=growth)
    state, bins, nodes = _State(w=jnp.zeros(())), set(), 0
    for minibatch in batches:
        state, metrics = step(state, minibatch)
        bins.add(int(step.last_packing["bins"]))
        nodes += int(metrics["nodes"])
        assert step.last_packing["packed_tokens"] == int(metrics["nodes"])  # padding: empty
    assert int(state.w) == len(batches)
    return step, bins, nodes


@pytest.mark.parametrize("spec", ["pow2", "1.5"])
def test_a_run_compiles_at_most_one_layout_per_rung(spec):
    batches = _minibatches(np.random.default_rng(0))
    exact, exact_bins, nodes = _replay("none", 1.0, batches)
    step, bins, bucketed_nodes = _replay(spec, 1.0, batches)
    rungs = ladder(spec, max(exact_bins))
    assert bins <= set(rungs) and step.num_compiles <= len(rungs)
    assert step.num_compiles == len(bins) < exact.num_compiles == len(exact_bins)
    assert bucketed_nodes == nodes  # the same tokens were computed, in fewer programs
    # A growth above the ladder's step reuses the largest layout met more often still.
    grown, _, _ = _replay(spec, 4.0, batches)
    assert grown.num_compiles < step.num_compiles and grown.padded_slots > 0
