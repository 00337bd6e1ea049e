"""`Sampler`: generation against full forwards, stop rules, fan-out, multi-turn
extension, the sampled distribution and compile counting."""

import jax
import numpy as np
import pytest

from mtrl.sampling import SamplingConfig
from mtrl.sampling import Sampler

from .conftest import BUCKETS

GREEDY = SamplingConfig(greedy=True, max_new_tokens=8)
SAMPLE = SamplingConfig(max_new_tokens=8)
PROMPTS = [[5, 17, 33], [100, 2, 9, 77, 41, 8, 9]]


def _check_against_full_forward(output, histories, full_log_probs, atol=1e-5):
    """Every generated token's logprob equals the cache-free forward's, row by row."""
    for row, completion in enumerate(output.to_lists()):
        history = histories[row]
        ref = full_log_probs(history + completion)[len(history) - 1: -1]
        got = np.asarray(output.logprobs[row, : len(completion)])
        np.testing.assert_allclose(got, ref[np.arange(len(completion)), completion], atol=atol)
    return True


def test_sampled_logprobs_equal_full_forward(sampler, full_log_probs):
    gen = sampler.generate(PROMPTS, jax.random.key(0), SAMPLE, num_samples=2)
    out = gen.output
    assert out.tokens.shape == (4, 8)
    np.testing.assert_array_equal(out.lengths, 8)
    _check_against_full_forward(out, [PROMPTS[i // 2] for i in range(4)], full_log_probs)
    # Temperature 1 without filters: the sampling distribution is the policy itself.
    np.testing.assert_allclose(out.sample_logprobs, out.logprobs, atol=1e-6)
    # The cache now holds prompt + completion for each real row.
    np.testing.assert_array_equal(gen.cache.num_tokens()[:4], [3 + 8, 3 + 8, 7 + 8, 7 + 8])


def test_greedy_is_deterministic_and_equals_full_forward_argmax(sampler, full_log_probs):
    first = sampler.generate(PROMPTS, jax.random.key(0), GREEDY).output
    second = sampler.generate(PROMPTS, jax.random.key(99), GREEDY).output
    np.testing.assert_array_equal(first.tokens, second.tokens)
    for row, completion in enumerate(first.to_lists()):
        ref = full_log_probs(PROMPTS[row] + completion)[len(PROMPTS[row]) - 1: -1]
        np.testing.assert_array_equal(ref.argmax(axis=-1), completion)
    _check_against_full_forward(first, PROMPTS, full_log_probs)
    np.testing.assert_array_equal(first.sample_logprobs, 0.0)


def test_stop_tokens_and_budgets_per_row(sampler):
    free = sampler.generate(PROMPTS, jax.random.key(0), GREEDY).output.to_lists()
    stop0 = free[0][3]
    end0 = free[0].index(stop0) + 1  # first occurrence ends row 0
    gen = sampler.generate(PROMPTS, jax.random.key(0), GREEDY,
                           max_new_tokens=[8, 5], stop_tokens=[[stop0], []])
    out = gen.output
    np.testing.assert_array_equal(out.lengths, [end0, 5])
    np.testing.assert_array_equal(out.finished_by_stop, [True, False])
    assert out.to_lists() == [free[0][:end0], free[1][:5]]
    np.testing.assert_array_equal(out.tokens[0, end0:], GREEDY.pad_id)
    np.testing.assert_array_equal(out.logprobs[1, 5:], 0.0)
    # Stop token kept in the cache: exactly prompt + generated tokens per row.
    np.testing.assert_array_equal(gen.cache.num_tokens()[:2], [3 + end0, 7 + 5])
    # Config-level stop ids apply to every row.
    stop1 = free[1][2]
    shared = SamplingConfig(greedy=True, max_new_tokens=8, stop_token_ids=(stop1,))
    out = sampler.generate(PROMPTS[1:], jax.random.key(0), shared).output
    assert out.to_lists() == [free[1][: free[1].index(stop1) + 1]]
    assert bool(out.finished_by_stop[0])


@pytest.mark.parametrize("prompts, num_samples", [
    (PROMPTS, 2),  # 2 prefills fanned out to 2 samples each
    ([PROMPTS[0], PROMPTS[1], PROMPTS[0]], 1),  # a repeated prompt is prefilled once
])
def test_fan_out_equals_separate_prefills(sampler, prompts, num_samples):
    tokens_before = sampler.stats["prefill_tokens"]
    shared = sampler.generate(prompts, jax.random.key(4), SAMPLE, num_samples=num_samples)
    shared_tokens = sampler.stats["prefill_tokens"] - tokens_before
    separate = sampler.generate(prompts, jax.random.key(4), SAMPLE, num_samples=num_samples,
                                share_prefix=False)
    separate_tokens = sampler.stats["prefill_tokens"] - tokens_before - shared_tokens
    assert shared_tokens == len(PROMPTS[0]) + len(PROMPTS[1])
    assert separate_tokens == num_samples * sum(len(p) for p in prompts)
    np.testing.assert_array_equal(shared.output.tokens, separate.output.tokens)
    np.testing.assert_allclose(shared.output.logprobs, separate.output.logprobs, atol=1e-5)
    np.testing.assert_array_equal(shared.cache.num_tokens(), separate.cache.num_tokens())
    # Rows sharing a prompt are independent draws, not copies of one sample.
    tokens = np.asarray(shared.output.tokens)
    same_prompt = [0, 1] if num_samples == 2 else [0, 2]
    assert not np.array_equal(tokens[same_prompt[0]], tokens[same_prompt[1]])


def test_smoke_buckets_sample_what_the_default_buckets_sample(tiny_model):
    """`--smoke`'s coarse buckets (config/smoke.py) change padding only: the same
    tokens and log-probabilities as the default policy's, sampled and greedy, first
    turn and extension."""
    from mtrl.sampling import BucketPolicy
    from mtrl.training.config.smoke import SAMPLER_BUCKETS
    outputs = []
    for buckets in (BucketPolicy(), BucketPolicy(**SAMPLER_BUCKETS)):
        sampler = Sampler(tiny_model, buckets=buckets)
        sampled = sampler.generate(PROMPTS, jax.random.key(7), SAMPLE, num_samples=2)
        greedy = sampler.generate(PROMPTS, jax.random.key(8), GREEDY)
        extended = sampler.extend_and_generate(sampled.cache, [0, 3], [[4, 5], [6]],
                                               jax.random.key(9), SAMPLE)
        outputs.append([o.output for o in (sampled, greedy, extended)])
    for default, smoke in zip(*outputs):
        np.testing.assert_array_equal(default.tokens, smoke.tokens)
        np.testing.assert_allclose(default.logprobs, smoke.logprobs, atol=1e-5)


def test_multi_turn_extension_equals_fresh_generation(sampler, full_log_probs):
    """Turn 2 appended to turn 1's cache == generating from the whole history at once."""
    turn1 = sampler.generate(PROMPTS, jax.random.key(0), GREEDY, num_samples=2)
    feedback = [[60, 61, 62], [70]]
    parents = [3, 0]  # row 3: prompt 1 sample 1; row 0: prompt 0 sample 0
    turn2 = sampler.extend_and_generate(turn1.cache, parents, feedback, jax.random.key(1),
                                        GREEDY, num_samples=2)
    completions = turn1.output.to_lists()
    histories = [PROMPTS[p // 2] + completions[p] + f for p, f in zip(parents, feedback)]
    fresh = sampler.generate(histories, jax.random.key(1), GREEDY, num_samples=2)
    np.testing.assert_array_equal(turn2.output.tokens, fresh.output.tokens)
    np.testing.assert_allclose(turn2.output.logprobs, fresh.output.logprobs, atol=1e-5)
    _check_against_full_forward(turn2.output, [histories[i // 2] for i in range(4)],
                                full_log_probs)
    expected = [len(h) + 8 for h in histories for _ in range(2)]
    np.testing.assert_array_equal(turn2.cache.num_tokens()[:4], expected)
    # A third turn from the second (the cache grows once the slots run out).
    turn3 = sampler.extend_and_generate(turn2.cache, [1], [[80, 81]], jax.random.key(2), GREEDY)
    history3 = histories[0] + turn2.output.to_lists()[1] + [80, 81]
    _check_against_full_forward(turn3.output, [history3], full_log_probs)
    assert turn3.cache.max_len >= int(turn3.cache.index)


def test_first_token_distribution_matches_softmax(sampler, full_log_probs):
    """4096 first tokens of one prompt at temperature 1, top-p 1 vs the model's softmax.

    Count c_v ~ Binomial(n, p_v), std sqrt(n p_v (1 - p_v)). The bound 5 std + 1 (the +1
    absorbs discreteness for tokens with n p_v << 1) has a per-token false-alarm rate
    below 6e-7, under 2e-4 over the 259 tokens for a correct sampler; the key is fixed,
    so the outcome is deterministic. The control shows the bound has power: the same
    counts are rejected against the temperature-0.7 distribution.
    """
    n = 4096
    prompt = [42, 43, 44, 45]
    config = SamplingConfig(max_new_tokens=1)
    out = sampler.generate([prompt], jax.random.key(123), config, num_samples=n).output
    counts = np.bincount(np.asarray(out.tokens[:, 0]), minlength=259)
    log_p = full_log_probs(prompt)[-1].astype(np.float64)
    p = np.exp(log_p)
    assert p.max() > 0.04  # peaked enough for the test to have power (see control)
    assert np.all(np.abs(counts - n * p) <= 5 * np.sqrt(n * p * (1 - p)) + 1)
    wrong = np.exp(log_p / 0.7)
    wrong /= wrong.sum()
    assert np.any(np.abs(counts - n * wrong) > 5 * np.sqrt(n * wrong * (1 - wrong)) + 1)
    np.testing.assert_allclose(out.logprobs[:, 0], log_p[np.asarray(out.tokens[:, 0])], atol=1e-5)


def test_no_recompilation_within_a_bucket(tiny_model):
    sampler = Sampler(tiny_model, buckets=BUCKETS)  # its own trace counter
    assert sampler.num_compiles == 0
    gen = sampler.generate([[1, 2, 3], [4, 5]], jax.random.key(0), SAMPLE, num_samples=2)
    sampler.extend_and_generate(gen.cache, [0], [[1, 2]], jax.random.key(4), SAMPLE)
    # Decode programs differ by the incoming cache length: 16 slots after a fresh prefill,
    # 64 after the extension.
    assert sampler.traces.as_dict() == {"prefill": 1, "decode": 2, "extend": 1}
    # Same buckets (<= 4 prompts of <= 16 tokens, <= 4 rows): other lengths, counts,
    # keys, budgets, stop ids and parameters reuse the compiled programs.
    sampler.generate([[9] * 16, [1], [2, 3, 4]], jax.random.key(1), SAMPLE,
                     max_new_tokens=[3, 8, 1], stop_tokens=[[5], [], [6, 7]])
    sampler.generate([[7, 7, 7, 7, 7]], jax.random.key(2), SAMPLE, num_samples=4)
    sampler.set_state(jax.tree.map(lambda x: x * 1.01, sampler.state))
    gen = sampler.generate([[3, 3]], jax.random.key(3), SAMPLE)
    sampler.extend_and_generate(gen.cache, [0, 0], [[5] * 9, [6]], jax.random.key(5),
                                SAMPLE, max_new_tokens=[2, 8])
    assert sampler.num_compiles == 4
    # A longer prompt moves to the next length bucket: one new prefill program and one
    # new decode program (its incoming cache has 32 slots).
    sampler.generate([[1] * 17], jax.random.key(0), SAMPLE)
    assert sampler.traces.as_dict() == {"prefill": 2, "decode": 3, "extend": 1}


def test_request_validation(sampler):
    with pytest.raises(ValueError, match="at least one token"):
        sampler.generate([[1], []], jax.random.key(0), SAMPLE)
    with pytest.raises(ValueError, match="max_new_tokens"):
        sampler.generate([[1]], jax.random.key(0), SAMPLE, max_new_tokens=[9])
    with pytest.raises(ValueError, match="stop token ids"):
        sampler.generate([[1]], jax.random.key(0), SAMPLE, stop_tokens=[[-3]])
    with pytest.raises(ValueError, match="stop_tokens needs 1 entries"):
        sampler.generate([[1]], jax.random.key(0), SAMPLE, stop_tokens=[[1], [2]])
    with pytest.raises(ValueError, match="parent rows"):
        gen = sampler.generate([[1]], jax.random.key(0), SAMPLE)
        sampler.extend_and_generate(gen.cache, [7], [[1]], jax.random.key(0), SAMPLE)
