"""SamplingConfig validation and the bucketing helpers."""

import jax.numpy as jnp
import numpy as np
import pytest

from mtrl.models.kv_cache import KVCache
from mtrl.sampling import BucketPolicy, SamplingConfig, buckets


@pytest.mark.parametrize("kwargs, match", [
    (dict(temperature=0.0), "temperature"),
    (dict(top_p=0.0), "top_p"),
    (dict(top_p=1.5), "top_p"),
    (dict(top_k=-1), "top_k"),
    (dict(max_new_tokens=0), "max_new_tokens"),
    (dict(stop_token_ids=[1]), "tuple"),
    (dict(stop_token_ids=(-2,)), "stop_token_ids"),
])
def test_config_rejects_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SamplingConfig(**kwargs)


def test_config_is_hashable_static_arg():
    a = SamplingConfig(top_k=5, stop_token_ids=(3, 4))
    assert hash(a) == hash(SamplingConfig(top_k=5, stop_token_ids=(3, 4)))
    assert a != SamplingConfig(top_k=6, stop_token_ids=(3, 4))


def test_round_up_helpers():
    assert [buckets.next_power_of_two(n) for n in (0, 1, 2, 3, 4, 5, 64, 65)] == [
        1, 1, 2, 4, 4, 8, 64, 128]
    assert buckets.next_power_of_two(3, minimum=16) == 16
    assert [buckets.round_up(n, 128) for n in (0, 1, 128, 129)] == [128, 128, 128, 256]
    policy = BucketPolicy(min_batch=2, min_length=8, cache_multiple=64)
    assert (policy.batch(1), policy.batch(3), policy.length(5), policy.length(9)) == (2, 4, 8, 16)
    assert policy.cache_len(65) == 128
    with pytest.raises(ValueError):
        BucketPolicy(min_batch=0)


def test_pad_token_rows():
    tokens, mask = buckets.pad_token_rows([[5, 6, 7], [8]], batch=3, length=4, pad_id=0)
    np.testing.assert_array_equal(tokens, [[5, 6, 7, 0], [8, 0, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(mask, [[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]])
    with pytest.raises(ValueError, match="more than the length"):
        buckets.pad_token_rows([[1, 2, 3]], batch=1, length=2)
    with pytest.raises(ValueError, match="do not fit"):
        buckets.pad_token_rows([[1], [2]], batch=1, length=2)


def _cache(batch=3, max_len=4):
    cache = KVCache.init(num_layers=2, batch=batch, max_len=max_len, num_kv_heads=1, head_dim=2)
    k = jnp.arange(cache.k.size, dtype=jnp.float32).reshape(cache.k.shape)
    valid = jnp.array([[1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 0]], bool)[:batch]
    return cache.replace(k=k, v=-k, valid=valid, index=jnp.int32(3))


def test_grow_cache_keeps_contents():
    cache = _cache()
    grown = buckets.grow_cache(cache, 7)
    assert grown.k.shape == (2, 3, 1, 7, 2) and grown.valid.shape == (3, 7)
    np.testing.assert_array_equal(grown.k[:, :, :, :4], cache.k)
    np.testing.assert_array_equal(grown.v[:, :, :, 4:], 0.0)
    np.testing.assert_array_equal(grown.valid[:, :4], cache.valid)
    assert not grown.valid[:, 4:].any() and int(grown.index) == 3
    np.testing.assert_array_equal(grown.num_tokens(), cache.num_tokens())
    with pytest.raises(ValueError, match="shrink"):
        buckets.grow_cache(cache, 2)


def test_cache_rows_gathers_and_invalidates_dummies():
    cache = _cache()
    out = buckets.cache_rows(cache, [2, 0, 2], batch=4)
    np.testing.assert_array_equal(out.k[:, :3], cache.k[:, jnp.array([2, 0, 2])])
    np.testing.assert_array_equal(out.num_tokens(), [3, 2, 3, 0])
    with pytest.raises(ValueError, match="rows must lie"):
        buckets.cache_rows(cache, [3], batch=1)
