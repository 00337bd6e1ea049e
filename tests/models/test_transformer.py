"""Transformer invariants: cache == no cache, padding does not leak, jit/vmap purity."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.models import KVCache, ModelConfig, Transformer, default_positions, init_cache

CONFIG = ModelConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_layers=2,
                     num_heads=4, num_kv_heads=2, head_dim=12, qk_norm=True, family="qwen3",
                     initializer_range=0.3, rope_theta=1000.0)


@pytest.fixture(scope="module")
def model():
    return Transformer(CONFIG, rngs=nnx.Rngs(0))


def ragged_batch(seed=0, batch=3, length=14):
    rng = np.random.default_rng(seed)
    tokens = jnp.asarray(rng.integers(0, CONFIG.vocab_size, (batch, length)), jnp.int32)
    mask = np.ones((batch, length), bool)
    mask[0, 3:5] = False
    mask[1, 0:2] = False
    mask[1, 9] = False
    mask[2, 10:] = False
    return tokens, jnp.asarray(mask)


def test_default_positions_count_real_tokens():
    mask = jnp.asarray([[1, 1, 0, 1, 0], [0, 0, 1, 1, 1]], bool)
    np.testing.assert_array_equal(default_positions(mask), [[0, 1, 2, 2, 3], [0, 0, 0, 1, 2]])
    offset = jnp.asarray([[4], [0]])
    np.testing.assert_array_equal(default_positions(mask, offset)[0], [4, 5, 6, 6, 7])


def test_shapes_dtypes_and_bad_inputs(model):
    tokens, mask = ragged_batch()
    logits = model(tokens, token_mask=mask)
    assert logits.shape == (3, 14, CONFIG.vocab_size) and logits.dtype == jnp.float32
    assert bool(jnp.isfinite(logits).all())
    with pytest.raises(ValueError, match="tokens must be"):
        model(tokens[0])
    with pytest.raises(ValueError, match="token_mask"):
        model(tokens, token_mask=mask[:, :3])
    with pytest.raises(ValueError, match="positions"):
        model(tokens, positions=jnp.zeros((3, 2), jnp.int32))


def test_padding_does_not_leak(model):
    """Real tokens' logits ignore what padding holds, and equal the row run alone."""
    tokens, mask = ragged_batch()
    logits = np.asarray(model(tokens, token_mask=mask))
    keep = np.asarray(mask)
    other = jnp.where(mask, tokens, (tokens + 1 + jnp.arange(14)) % CONFIG.vocab_size)
    relabelled = np.asarray(model(other, token_mask=mask))
    np.testing.assert_allclose(relabelled[keep], logits[keep], atol=1e-6, rtol=0)
    alone = np.asarray(model(tokens[1][keep[1]][None]))[0]
    np.testing.assert_allclose(logits[1][keep[1]], alone, atol=1e-5, rtol=0)


def test_fully_padded_row_is_finite(model):
    tokens, mask = ragged_batch()
    mask = mask.at[0].set(False)
    logits = model(tokens, token_mask=mask)
    assert bool(jnp.isfinite(logits).all())


def test_explicit_positions_and_rotary_relativity(model):
    """Default positions are what the model uses; shifting every position by the same
    amount changes nothing (rotary attention sees only relative offsets); reordering
    positions does change the logits."""
    tokens, mask = ragged_batch()
    base = np.asarray(model(tokens, token_mask=mask))
    positions = default_positions(mask)
    np.testing.assert_array_equal(model(tokens, token_mask=mask, positions=positions), base)
    shifted = np.asarray(model(tokens, token_mask=mask, positions=positions + 37))
    keep = np.asarray(mask)
    np.testing.assert_allclose(shifted[keep], base[keep], atol=1e-4, rtol=0)
    scrambled = np.asarray(model(tokens, token_mask=mask, positions=positions[:, ::-1]))
    assert np.abs(scrambled[keep] - base[keep]).max() > 1e-2


@pytest.mark.parametrize("chunks", [(14,), (7, 7), (1,) * 14], ids=["one", "two", "decode"])
def test_cache_equals_full_forward(model, chunks):
    """Prefill in chunks (padding inside chunks) through the cache == one full forward."""
    tokens, mask = ragged_batch()
    full = np.asarray(model(tokens, token_mask=mask))
    cache = init_cache(CONFIG, batch=3, max_len=20)
    pieces, start = [], 0
    for size in chunks:
        logits, cache = model(tokens[:, start:start + size], token_mask=mask[:, start:start + size],
                              cache=cache)
        pieces.append(np.asarray(logits))
        start += size
    chunked = np.concatenate(pieces, axis=1)
    keep = np.asarray(mask)
    np.testing.assert_allclose(chunked[keep], full[keep], atol=1e-5, rtol=0)
    assert int(cache.index) == 14
    np.testing.assert_array_equal(cache.valid[:, :14], mask)
    assert not bool(cache.valid[:, 14:].any())
    np.testing.assert_array_equal(cache.num_tokens(), keep.sum(axis=1))


def test_cache_fan_out_matches_full_forward(model):
    """Prefill once, repeat each row G times, extend every copy with different tokens:
    each copy equals a full forward of prompt + its own continuation."""
    tokens, mask = ragged_batch()
    prompt, prompt_mask = tokens[:, :7], mask[:, :7]
    _, cache = model(prompt, token_mask=prompt_mask, cache=init_cache(CONFIG, 3, 20))
    cache = cache.repeat(2)
    rng = np.random.default_rng(1)
    extra = jnp.asarray(rng.integers(0, CONFIG.vocab_size, (6, 7)), jnp.int32)
    extra_mask = jnp.ones((6, 7), bool).at[3, 4].set(False).at[0, 6].set(False)
    logits, _ = model(extra, token_mask=extra_mask, cache=cache)
    full_tokens = jnp.concatenate([jnp.repeat(prompt, 2, axis=0), extra], axis=1)
    full_mask = jnp.concatenate([jnp.repeat(prompt_mask, 2, axis=0), extra_mask], axis=1)
    full = np.asarray(model(full_tokens, token_mask=full_mask))[:, 7:]
    keep = np.asarray(extra_mask)
    np.testing.assert_allclose(np.asarray(logits)[keep], full[keep], atol=1e-5, rtol=0)


def test_jit_and_vmap_over_stacked_agents():
    """The sampler's usage: split once, merge inside jit, vmap over stacked parameters."""
    graph, state_a = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(1)))
    _, state_b = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(2)))
    stacked = jax.tree.map(lambda a, b: jnp.stack([a, b]), state_a, state_b)
    tokens, mask = ragged_batch()

    @jax.jit
    def step(state, tokens, mask, cache):
        return nnx.merge(graph, state)(tokens, token_mask=mask, cache=cache)

    cache = init_cache(CONFIG, 3, 20)
    stacked_cache = jax.tree.map(lambda x: jnp.stack([x, x]), cache)
    logits, new_caches = jax.vmap(step, in_axes=(0, None, None, 0))(stacked, tokens, mask,
                                                                    stacked_cache)
    assert logits.shape == (2, 3, 14, CONFIG.vocab_size)
    assert isinstance(new_caches, KVCache) and new_caches.k.shape[0] == 2
    for agent, state in enumerate((state_a, state_b)):
        expected = nnx.merge(graph, state)(tokens, token_mask=mask)
        np.testing.assert_allclose(logits[agent][np.asarray(mask)],
                                   np.asarray(expected)[np.asarray(mask)], atol=1e-5, rtol=0)
    assert np.abs(np.asarray(logits[0] - logits[1])).max() > 1e-2


def test_bfloat16_compute_gives_float32_logits(model):
    """The float32 model's weights rounded to bf16, computed in bf16: float32 logits
    close to the float32 model's."""
    config = CONFIG.replace(dtype=jnp.bfloat16, param_dtype="bfloat16")
    graph = nnx.graphdef(nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0))))
    bf16_state = jax.tree.map(lambda x: x.astype(jnp.bfloat16), nnx.state(model))
    bf16_model = nnx.merge(graph, bf16_state)
    assert bf16_model.config.dtype == "bfloat16"
    assert bf16_model.layers.mlp.up_proj.kernel[...].dtype == jnp.bfloat16
    tokens, mask = ragged_batch()
    logits, cache = bf16_model(tokens, token_mask=mask, cache=init_cache(config, 3, 20))
    assert logits.dtype == jnp.float32 and cache.k.dtype == jnp.bfloat16
    assert bool(jnp.isfinite(logits).all())
    expected = np.asarray(model(tokens, token_mask=mask))
    keep = np.asarray(mask)
    error = np.abs(np.asarray(logits) - expected)[keep].max()
    assert error < 0.05 * np.abs(expected[keep]).max(), error
    # A model initialised directly in bf16 stores bf16 parameters.
    fresh = nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0)))
    assert {x.dtype for x in jax.tree.leaves(nnx.state(fresh))} == {jnp.dtype(jnp.bfloat16)}


def test_tied_head_and_parameter_count(model):
    count = sum(x.size for x in jax.tree.leaves(nnx.state(model, nnx.Param)))
    assert count == CONFIG.num_params()
    tied_config = CONFIG.replace(tie_word_embeddings=True)
    tied = nnx.eval_shape(lambda: Transformer(tied_config, rngs=nnx.Rngs(0)))
    assert tied.lm_head is None and model.lm_head is not None
    tied_count = sum(x.size for x in jax.tree.leaves(nnx.state(tied, nnx.Param)))
    assert tied_count == tied_config.num_params() == count - 97 * 32
