"""A frozen `Sampler` runs each call in the smallest compiled shape that holds it: no new
program, the same samples as exact buckets."""

import jax
import numpy as np

from mtrl.sampling import BucketPolicy, Sampler, SamplingConfig
from mtrl.sampling.buckets import ShapeCover

GREEDY = SamplingConfig(greedy=True, max_new_tokens=6)
FINE = BucketPolicy(min_batch=1, min_length=4, cache_multiple=16)


def calls(sampler):
    """Smaller than the warm-up's in every axis: 3 prompts (2 distinct) of <= 7 tokens,
    one child of 2 tokens; returns the outputs."""
    first = sampler.generate([[5, 17, 33], [100, 2, 9, 77, 41, 8, 9], [5, 17, 33]],
                             jax.random.key(1), GREEDY, num_samples=2)
    second = sampler.extend_and_generate(first.cache, [3], [[60, 61]], jax.random.key(2),
                                         GREEDY)
    return [first.output, second.output]


def test_frozen_sampler_pads_smaller_calls_into_compiled_shapes(tiny_model):
    frozen, exact = Sampler(tiny_model, buckets=FINE), Sampler(tiny_model, buckets=FINE)
    # Warm-up: 8 prompts of 20 tokens, 16 rows, then 16 children of 9 tokens.
    big = frozen.generate([[i + 1] * 20 for i in range(8)], jax.random.key(0), GREEDY,
                          num_samples=2)
    frozen.extend_and_generate(big.cache, list(range(16)), [[3] * 9] * 16, jax.random.key(0),
                               GREEDY)
    frozen.freeze()
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
