"""A frozen `Sampler` runs each call in the smallest compiled shape that holds it: no new
program, the same samples as exact buckets; its shapes, saved and restored into
another sampler, pad that one's calls alike."""

import json

import jax
import numpy as np

from mtrl.sampling import BucketPolicy, Sampler, SamplingConfig
from mtrl.sampling.buckets import ShapeCover, program_key

GREEDY = SamplingConfig(greedy=True, max_new_tokens=6)
FINE = BucketPolicy(min_batch=1, min_length=4, cache_multiple=16)


def generations(sampler):
    """Smaller than the warm-up's in every axis: 3 prompts (2 distinct) of <= 7 tokens,
    one child of 2 tokens; returns the two Generations."""
    first = sampler.generate([[5, 17, 33], [100, 2, 9, 77, 41, 8, 9], [5, 17, 33]],
                             jax.random.key(1), GREEDY, num_samples=2)
    second = sampler.extend_and_generate(first.cache, [3], [[60, 61]], jax.random.key(2),
                                         GREEDY)
    return [first, second]


def calls(sampler):
    return [g.output for g in generations(sampler)]


def warm_up(sampler):
    """8 prompts of 20 tokens, 16 rows, then 16 children of 9 tokens; then frozen."""
    big = sampler.generate([[i + 1] * 20 for i in range(8)], jax.random.key(0), GREEDY,
                           num_samples=2)
    sampler.extend_and_generate(big.cache, list(range(16)), [[3] * 9] * 16,
                                jax.random.key(0), GREEDY)
    sampler.freeze()


def test_frozen_sampler_pads_smaller_calls_into_compiled_shapes(tiny_model):
    frozen, exact = Sampler(tiny_model, buckets=FINE), Sampler(tiny_model, buckets=FINE)
    warm_up(frozen)
    warm = frozen.num_compiles
    outputs = calls(frozen)
    assert frozen.num_compiles == warm  # nothing new after the warm-up
    expected = calls(exact)
    assert exact.num_compiles == 4  # the exact buckets are other shapes: they compile
    for got, want in zip(outputs, expected):
        np.testing.assert_array_equal(got.tokens, want.tokens)
        np.testing.assert_allclose(got.logprobs, want.logprobs, atol=1e-5)


def test_a_call_larger_than_every_compiled_shape_compiles():
    cover = ShapeCover()
    assert cover.shape("p", (4, 16)) == (4, 16)
    assert cover.shape("p", (8, 4)) == (8, 4)
    cover.frozen = True
    assert cover.shape("p", (2, 4)) == (8, 4)  # the smaller of the two that hold it
    assert cover.shape("p", (2, 4), fits=lambda s: s[1] >= 16) == (4, 16)
    assert cover.shape("p", (2, 32)) == (2, 32)  # none holds it: compiled
    assert cover.shape("q", (2, 8)) == (2, 8)  # programs are apart


def test_the_first_batch_is_the_prompts_asked_for(tiny_model):
    """Repeated prompts (one distinct) prefill in the batch of all of them: a step whose
    tasks happen to share a prompt meets no new shape."""
    sampler = Sampler(tiny_model, buckets=FINE)
    sampler.generate([[1, 2], [3, 4]], jax.random.key(0), GREEDY)
    sampler.generate([[1, 2], [1, 2]], jax.random.key(0), GREEDY)
    assert sampler.traces.as_dict() == {"prefill": 1, "decode": 1}


def test_restored_shapes_pad_as_the_sampler_they_were_saved_from(tiny_model):
    """A resumed run's sampler: the saved shapes (through JSON, as a checkpoint's extra
    holds them) and frozen, it runs each call in the shape the saving sampler does, and
    so draws the same samples bit for bit; without them it runs the exact buckets."""
    frozen = Sampler(tiny_model, buckets=FINE)
    warm_up(frozen)
    saved = json.loads(json.dumps(frozen.shapes.state()))
    resumed, fresh = Sampler(tiny_model, buckets=FINE), Sampler(tiny_model, buckets=FINE)
    resumed.shapes.restore(saved)
    resumed.freeze()
    fresh.freeze()
    want, got, exact = generations(frozen), generations(resumed), generations(fresh)
    for w, g, e in zip(want, got, exact):
        assert g.cache.k.shape == w.cache.k.shape != e.cache.k.shape  # rows, slots
        np.testing.assert_array_equal(g.output.tokens, w.output.tokens)
        np.testing.assert_array_equal(g.output.logprobs, w.output.logprobs)
    assert resumed.shapes.state() == frozen.shapes.state() == saved


def test_a_program_key_is_the_same_text_in_every_process():
    sampled = ("decode", SamplingConfig(max_new_tokens=6, stop_token_ids=(2,)))
    key = program_key(sampled)
    assert json.loads(key)[0] == "decode" and key == program_key(
        ("decode", SamplingConfig(max_new_tokens=6, stop_token_ids=(2,))))
    assert key != program_key(("decode", GREEDY)) and program_key("prefill") == "prefill"
    cover = ShapeCover()
    cover.shape(sampled, (4, 16))
    cover.shape("prefill", (2, 8))
    assert cover.state() == {"prefill": [[2, 8]], key: [[4, 16]]}
