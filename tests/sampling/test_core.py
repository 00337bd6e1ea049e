"""The functional core: prefill / decode against cache-free full forwards, cache
extension, and vmap over stacked agent parameters."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from mtrl.models import Transformer, init_cache
from mtrl.sampling import SamplingConfig, decode, filter_logits, pad_token_rows, prefill
from mtrl.sampling.prefill import last_valid_logits

from .conftest import TINY

prefill_jit = jax.jit(prefill, static_argnums=0)
decode_jit = jax.jit(decode, static_argnums=(0, 5))
GREEDY = SamplingConfig(greedy=True, max_new_tokens=8)
FILTERED = SamplingConfig(temperature=0.7, top_k=40, max_new_tokens=8)


def _chunk(rows, batch=2, length=16):
    tokens, mask = pad_token_rows(rows, batch, length)
    return jnp.asarray(tokens), jnp.asarray(mask)


def test_last_valid_logits_picks_last_real_token():
    logits = jnp.arange(2 * 4 * 3, dtype=jnp.float32).reshape(2, 4, 3)
    mask = jnp.array([[1, 0, 1, 0], [0, 0, 0, 0]], bool)
    out = last_valid_logits(logits, mask)
    np.testing.assert_array_equal(out, [[6.0, 7.0, 8.0], [0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match=r"\[B, L, V\]"):
        last_valid_logits(logits[0], mask)


def test_cache_and_no_cache_logits_agree(tiny_model, full_log_probs):
    """Two chunks through the cache (ragged rows, padding inside each chunk) give the
    same per-token logits as one cache-free forward of each row's real tokens."""
    graphdef, state = nnx.split(tiny_model)
    rows_a = [[11, 12, 13, 14, 15], [40, 41]]
    rows_b = [[16, 17], [42, 43, 44, 45, 46, 47]]
    cache = init_cache(TINY, 2, 64)
    model = nnx.merge(graphdef, state)
    step = jax.jit(lambda c, t, m: model(t, token_mask=m, cache=c)[::-1])
    cache, logits_a = step(cache, *_chunk(rows_a, length=8))
    cache, logits_b = step(cache, *_chunk(rows_b, length=8))
    assert int(cache.index) == 16
    np.testing.assert_array_equal(cache.num_tokens(), [7, 8])
    for b in range(2):
        ref = full_log_probs(rows_a[b] + rows_b[b])
        got = np.concatenate([np.asarray(logits_a[b, : len(rows_a[b])]),
                              np.asarray(logits_b[b, : len(rows_b[b])])])
        # Whole vocabulary, including log-probs near -12: float32 round-off of the two
        # summation orders (cache blocks vs one block) scales with magnitude, hence rtol.
        np.testing.assert_allclose(jax.nn.log_softmax(got, axis=-1), ref, atol=1e-5, rtol=1e-5)


def test_extended_cache_equals_fresh_prefill(tiny_model):
    graphdef, state = nnx.split(tiny_model)
    history = [[3, 1, 4, 1, 5, 9, 2], [6, 5]]
    appended = [[2, 6, 5], [3, 5, 8, 9, 7]]
    extended, _ = prefill_jit(graphdef, state, init_cache(TINY, 2, 64), *_chunk(history))
    extended, last_ext = prefill_jit(graphdef, state, extended, *_chunk(appended))
    whole = [h + a for h, a in zip(history, appended)]
    fresh, last_fresh = prefill_jit(graphdef, state, init_cache(TINY, 2, 64), *_chunk(whole))
    np.testing.assert_allclose(last_ext, last_fresh, atol=1e-5)
    np.testing.assert_array_equal(extended.num_tokens(), fresh.num_tokens())
    budget = jnp.array([8, 8], jnp.int32)
    out_ext, cache_ext = decode_jit(graphdef, state, extended, last_ext, jax.random.key(0),
                                    GREEDY, budget)
    out_fresh, _ = decode_jit(graphdef, state, fresh, last_fresh, jax.random.key(0), GREEDY, budget)
    np.testing.assert_array_equal(out_ext.tokens, out_fresh.tokens)
    np.testing.assert_allclose(out_ext.logprobs, out_fresh.logprobs, atol=1e-5)
    # Afterwards the cache holds exactly history + appended + generated tokens per row.
    np.testing.assert_array_equal(cache_ext.num_tokens(), [10 + 8, 7 + 8])


def test_decode_logprobs_match_full_forward(tiny_model, full_log_probs):
    graphdef, state = nnx.split(tiny_model)
    prompts = [[7, 8, 9, 10], [200, 13, 99]]
    cache, last = prefill_jit(graphdef, state, init_cache(TINY, 2, 64), *_chunk(prompts))
    config = FILTERED
    out, _ = decode_jit(graphdef, state, cache, last, jax.random.key(3), config,
                        jnp.array([8, 5], jnp.int32), jnp.full((2, 1), -1, jnp.int32))
    np.testing.assert_array_equal(out.lengths, [8, 5])
    for b, completion in enumerate(out.to_lists()):
        ref = full_log_probs(prompts[b] + completion)[len(prompts[b]) - 1: -1]
        steps = np.arange(len(completion))
        np.testing.assert_allclose(out.logprobs[b, : len(completion)], ref[steps, completion],
                                   atol=1e-5)
        # sample_logprobs: the filtered, tempered distribution of the same logits; dividing
        # by the temperature scales the round-off by 1 / temperature as well.
        q = jax.nn.log_softmax(filter_logits(jnp.asarray(ref), config), axis=-1)
        np.testing.assert_allclose(out.sample_logprobs[b, : len(completion)],
                                   np.asarray(q)[steps, completion], atol=1e-5 / config.temperature)
    np.testing.assert_array_equal(out.tokens[1, 5:], 0)
    np.testing.assert_array_equal(out.logprobs[1, 5:], 0.0)


def test_vmap_over_stacked_agent_states_equals_separate_calls():
    graphdef, state_a = nnx.split(Transformer(TINY, rngs=nnx.Rngs(1)))
    _, state_b = nnx.split(Transformer(TINY, rngs=nnx.Rngs(2)))
    stacked = jax.tree.map(lambda a, b: jnp.stack([a, b]), state_a, state_b)
    prompts = [[[1, 2, 3], [9, 8, 7, 6, 5]], [[4, 4, 4, 4], [10]]]  # per agent
    chunks = [_chunk(p) for p in prompts]
    tokens = jnp.stack([c[0] for c in chunks])
    masks = jnp.stack([c[1] for c in chunks])
    caches = jax.tree.map(lambda x: jnp.stack([x, x]), init_cache(TINY, 2, 64))
    keys = jnp.stack([jax.random.key(10), jax.random.key(11)])
    budgets = jnp.array([[8, 3], [6, 8]], jnp.int32)
    stops = jnp.full((2, 2, 1), -1, jnp.int32)
    config = FILTERED  # shares the separate calls' compiled decode with the test above

    @jax.jit
    def both_agents(states, caches, tokens, masks, keys, budgets, stops):
        def one(state, cache, tok, mask, key, budget, stop):
            cache, last = prefill(graphdef, state, cache, tok, mask)
            return decode(graphdef, state, cache, last, key, config, budget, stop)
        return jax.vmap(one)(states, caches, tokens, masks, keys, budgets, stops)

    out, cache = both_agents(stacked, caches, tokens, masks, keys, budgets, stops)
    for agent, state in enumerate([state_a, state_b]):
        c, last = prefill_jit(graphdef, state, init_cache(TINY, 2, 64), *chunks[agent])
        ref, ref_cache = decode_jit(graphdef, state, c, last, keys[agent], config,
                                    budgets[agent], stops[agent])
        np.testing.assert_array_equal(out.tokens[agent], ref.tokens)
        np.testing.assert_array_equal(out.lengths[agent], ref.lengths)
        np.testing.assert_allclose(out.logprobs[agent], ref.logprobs, atol=1e-5)
        np.testing.assert_array_equal(cache.valid[agent], ref_cache.valid)
    # The two agents really are different models.
    assert not np.array_equal(out.tokens[0], out.tokens[1])


def test_decode_shape_checks(tiny_model):
    graphdef, state = nnx.split(tiny_model)
    cache = init_cache(TINY, 2, 64)
    with pytest.raises(ValueError, match="max_new_tokens must be"):
        decode(graphdef, state, cache, jnp.zeros((2, TINY.vocab_size)), jax.random.key(0),
               GREEDY, jnp.array([1, 2, 3], jnp.int32))
    with pytest.raises(ValueError, match="cache batch"):
        decode(graphdef, state, cache, jnp.zeros((3, TINY.vocab_size)), jax.random.key(0),
               GREEDY, jnp.array([1, 2, 3], jnp.int32))
    with pytest.raises(ValueError, match="token_mask"):
        prefill(graphdef, state, cache, jnp.zeros((2, 4), jnp.int32), jnp.zeros((2, 5), bool))
