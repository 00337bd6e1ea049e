"""ModelConfig.decode_attention: the choice, and the kernel's decode against the einsum's.

The kernel path (mtrl.kernels.decode_attention) computes the einsum path's formula in
another summation order with a polynomial exp: float32 attention outputs agree to
~1e-6 relative, so a float32 sampler's log-probabilities agree to 1e-5 and its greedy
tokens are the same (the tiny model's greedy margins are far above that). With a
bfloat16 model both paths round probabilities and outputs to bfloat16 at the same
places; log-probabilities agree to 0.05 there (a flipped bfloat16 rounding in one
layer moves a logit by ~1e-2).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.kernels import library
from mtrl.models import Transformer, preset
from mtrl.models import cached_attention as module
from mtrl.models.attention import grouped_attention
from mtrl.sampling import BucketPolicy, SamplingConfig, Sampler

needs_kernel = pytest.mark.skipif(not library.available(), reason=f"kernels: {library.load()}")
PROMPTS = [[5, 6, 7], [9, 10, 11, 12, 13, 14, 15]]
BUCKETS = BucketPolicy(min_batch=4, min_length=16, cache_multiple=64)


def test_config_refuses_unknown_choice():
    with pytest.raises(ValueError, match="decode_attention must be one of"):
        preset("tiny", decode_attention="flash")


def test_without_library_auto_is_einsum_and_kernel_fails(monkeypatch, capsys):
    monkeypatch.setattr(library, "load", lambda: "kernel not built (python -m mtrl.kernels.build)")
    module._PRINTED.clear()
    assert module.resolve_decode_attention("auto") == "einsum"
    module.resolve_decode_attention("auto")
    assert capsys.readouterr().out.count("decode_attention auto -> einsum (kernel not built") == 1
    assert module.resolve_decode_attention("einsum") == "einsum"
    with pytest.raises(RuntimeError, match="decode attention kernel unavailable: kernel not"):
        module.resolve_decode_attention("kernel")


def test_auto_is_the_kernel_exactly_on_one_cpu_device_with_the_library():
    expected = (jax.default_backend() == "cpu" and jax.device_count() == 1
                and library.available())
    assert (module.resolve_decode_attention("auto") == "kernel") == expected


@needs_kernel
@pytest.mark.parametrize("length", [1, 3])
def test_cached_attention_kernel_equals_einsum(length):
    rng = np.random.default_rng(length)
    b, kv, g, s, d, index = 3, 2, 3, 24, 16, 10
    q = jnp.asarray(rng.standard_normal((b, length, kv, g, d)), jnp.float32)
    k, v = (jnp.asarray(rng.standard_normal((b, kv, s, d)), jnp.float32) for _ in range(2))
    slots = jnp.arange(s)
    valid = jnp.asarray(rng.random((b, s)) < 0.8)
    mask = valid[:, None] & (slots[None, None] <= index + jnp.arange(length)[None, :, None])
    einsum = grouped_attention(q, [(k, v, mask)])
    got = module.cached_attention(q, k, v, mask, jnp.int32(index), "kernel")
    if length > 1:  # chunks take the einsum whatever the choice
        np.testing.assert_array_equal(got, einsum)
    else:
        np.testing.assert_allclose(got, einsum, rtol=0, atol=2e-6 * np.abs(einsum).max())
    with pytest.raises(ValueError, match="q must be"):
        module.cached_attention(q[0], k, v, mask, jnp.int32(index), "kernel")


def generate(config, choice, sampling):
    model = Transformer(config.replace(decode_attention=choice), rngs=nnx.Rngs(0))
    sampler = Sampler(model, buckets=BUCKETS)
    return sampler.generate(PROMPTS, jax.random.key(3), sampling, num_samples=2).output


@needs_kernel
@pytest.mark.parametrize("dtype,atol", [("float32", 1e-5), ("bfloat16", 5e-2)])
def test_sampler_decodes_the_same_with_kernel_and_einsum(dtype, atol):
    config = preset("tiny", initializer_range=0.1, dtype=dtype)
    greedy = SamplingConfig(greedy=True, max_new_tokens=12)
    kernel, einsum = generate(config, "kernel", greedy), generate(config, "einsum", greedy)
    np.testing.assert_array_equal(kernel.tokens, einsum.tokens)
    np.testing.assert_allclose(kernel.logprobs, einsum.logprobs, atol=atol)
