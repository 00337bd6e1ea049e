"""Supervised warm start: example layout, the masked loss and its gradient, the NaN
guard, and memorisation checked by greedy decoding with the sampler."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from mtrl.models import PRESETS, Transformer
from mtrl.rollout.formatting import PlainFormat
from mtrl.sampling import Sampler, SamplingConfig
from mtrl.tokenizers import ByteTokenizer
from mtrl.training.policy.optim import OptimConfig
from mtrl.training.sft.sft import (SFTConfig, make_sft_step, masked_nll, run_sft, sft_batches,
                                   sft_examples)
from mtrl.training.update.step_metrics import check_finite

from tests.training.sft.tiny_sft import CONFIG, EOS, MAX_LEN, PAD, PAIRS, TOKENIZER
MEMORISE_OPTIM = OptimConfig(learning_rate=1e-2, max_grad_norm=1.0)


@pytest.fixture(scope="module")
def model():
    return nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(0)))


def test_examples_layout_matches_the_rollout_prompt():
    examples = sft_examples(TOKENIZER, [("ab", "cd"), ("q", "")], PlainFormat(), 8)
    # PlainFormat.first("ab") = "ab\n": the prompt tokens a rollout starts from.
    np.testing.assert_array_equal(examples.tokens, [[97, 98, 10, 99, 100, EOS, PAD, PAD],
                                                    [113, 10, EOS, PAD, PAD, PAD, PAD, PAD]])
    np.testing.assert_array_equal(examples.loss_mask.astype(int), [[0, 0, 0, 1, 1, 1, 0, 0],
                                                                   [0, 0, 1, 0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(examples.token_mask.astype(int), [[1, 1, 1, 1, 1, 1, 0, 0],
                                                                    [1, 1, 1, 0, 0, 0, 0, 0]])
    assert len(examples) == 2 and examples.num_truncated == 0 and examples.num_dropped == 0


def test_examples_truncate_long_completions_and_drop_long_prompts():
    examples = sft_examples(TOKENIZER, [("ab", "cdefg"), ("abcdef", "x")], PlainFormat(), 6)
    np.testing.assert_array_equal(examples.tokens, [[97, 98, 10, 99, 100, 101]])
    np.testing.assert_array_equal(examples.loss_mask.astype(int), [[0, 0, 0, 1, 1, 1]])
    assert examples.num_truncated == 1 and examples.num_dropped == 1
    with pytest.raises(ValueError, match="no example fits"):
        sft_examples(TOKENIZER, [("abcdef", "x")], PlainFormat(), 6)


def test_masked_nll_ignores_masked_positions():
    logp = jnp.array([[-1.0, -2.0, jnp.nan], [-4.0, -jnp.inf, -0.5]])
    mask = jnp.array([[True, True, False], [False, False, True]])
    value, grad = jax.value_and_grad(masked_nll)(logp, mask)
    assert float(value) == pytest.approx((1.0 + 2.0 + 0.5) / 3)
    third = np.float32(1) / np.float32(3)
    np.testing.assert_array_equal(grad, [[-third, -third, 0.0], [0.0, 0.0, -third]])


def completion_nll_by_hand(graphdef, params, tokens, token_mask, loss_mask):
    """Token mean of −log softmax(logits[i − 1])[tokens[i]] over the completion."""
    logits = nnx.merge(graphdef, params)(tokens, token_mask=token_mask)
    log_softmax = jax.nn.log_softmax(logits[:, :-1], axis=-1)
    logp = jnp.take_along_axis(log_softmax, tokens[:, 1:, None], axis=-1)[..., 0]
    mask = loss_mask[:, 1:]
    return -jnp.sum(jnp.where(mask, logp, 0.0)) / jnp.sum(mask)


def recording_sgd(learning_rate):
    """θ ← θ − lr·g, keeping the last gradient g as the optimizer state (to read it back)."""
    return optax.GradientTransformation(
        init=lambda params: jax.tree.map(jnp.zeros_like, params),
        update=lambda grads, state, params=None: (
            jax.tree.map(lambda g: -learning_rate * g, grads), grads))


@pytest.fixture(scope="module")
def recording_step(model):
    return make_sft_step(model[0], recording_sgd(0.1))


def run_step(step, params, rows):
    """One step on copies (the step donates its inputs): (params, gradient, metrics)."""
    params = jax.tree.map(jnp.copy, params)
    opt_state = jax.tree.map(jnp.zeros_like, params)
    return step(params, opt_state, *rows)


def test_loss_and_gradient_cover_the_completion_only(model, recording_step):
    graphdef, params = model
    examples = sft_examples(TOKENIZER, PAIRS, PlainFormat(), MAX_LEN)
    rows = tuple(map(jnp.asarray, (examples.tokens, examples.token_mask, examples.loss_mask)))
    _, grads, metrics = run_step(recording_step, params, rows)
    hand_loss, hand_grads = jax.jit(jax.value_and_grad(completion_nll_by_hand, argnums=1),
                                    static_argnums=0)(graphdef, params, *rows)
    assert float(metrics["loss"]) == pytest.approx(float(hand_loss), rel=1e-5)
    assert float(metrics["num_tokens"]) == rows[2].sum() == 3 + 1 + 2 + 1 + 5 + 1
    assert float(metrics["finite"]) == 1.0
    for got, want in zip(jax.tree.leaves(grads), jax.tree.leaves(hand_grads), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6 * float(jnp.max(jnp.abs(want))))
    # Whatever sits in the padding (ids, even a loss mask there) changes nothing.
    tokens, token_mask, loss_mask = rows
    noisy = (jnp.where(token_mask, tokens, 65), token_mask, loss_mask | ~token_mask)
    _, grads2, metrics2 = run_step(recording_step, params, noisy)
    assert float(metrics2["loss"]) == float(metrics["loss"])
    for a, b in zip(jax.tree.leaves(grads), jax.tree.leaves(grads2)):
        np.testing.assert_array_equal(a, b)
    assert recording_step.num_compiles == 1


@pytest.mark.parametrize("chunk", [7, 9])
def test_sft_step_with_a_chunked_head_equals_the_whole_head(model, chunk):
    """SFT's cross-entropy follows ModelConfig.logits_chunk: 3 rows x 15 predicted
    positions in chunks of 7 or 9 (dividing 45 and not) give the whole head's loss
    and gradient, to float32 summation order."""
    _, params = model
    examples = sft_examples(TOKENIZER, PAIRS, PlainFormat(), MAX_LEN)
    rows = tuple(map(jnp.asarray, (examples.tokens, examples.token_mask, examples.loss_mask)))

    def step_for(logits_chunk):
        graphdef = nnx.graphdef(nnx.eval_shape(lambda: Transformer(
            CONFIG.replace(logits_chunk=logits_chunk), rngs=nnx.Rngs(0))))
        return run_step(make_sft_step(graphdef, recording_sgd(0.1)), params, rows)

    _, whole_grads, whole = step_for(0)
    _, grads, chunked = step_for(chunk)
    assert float(chunked["loss"]) == pytest.approx(float(whole["loss"]), rel=1e-6)
    for got, want in zip(jax.tree.leaves(grads), jax.tree.leaves(whole_grads), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_sft_step_with_remat_equals_the_plain_step(model):
    """SFTConfig.remat (train.remat in a run) recomputes the layers in the backward
    pass: the same loss and gradient, to float32 summation order."""
    graphdef, params = model
    examples = sft_examples(TOKENIZER, PAIRS, PlainFormat(), MAX_LEN)
    rows = tuple(map(jnp.asarray, (examples.tokens, examples.token_mask, examples.loss_mask)))
    _, plain_grads, plain = run_step(make_sft_step(graphdef, recording_sgd(0.1)), params, rows)
    _, grads, remat = run_step(make_sft_step(graphdef, recording_sgd(0.1), remat="full"),
                               params, rows)
    assert float(remat["loss"]) == pytest.approx(float(plain["loss"]), rel=1e-6)
    for got, want in zip(jax.tree.leaves(grads), jax.tree.leaves(plain_grads), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="remat must be one of"):
        make_sft_step(graphdef, recording_sgd(0.1), remat="some")
    with pytest.raises(ValueError, match="remat must be one of"):
        SFTConfig(steps=1, remat="some")


def test_nonfinite_step_leaves_parameters_unchanged(model, recording_step):
    graphdef, params = model
    examples = sft_examples(TOKENIZER, PAIRS, PlainFormat(), MAX_LEN)
    # An id past the embedding table reads NaN (jnp.take fills out-of-range gathers).
    tokens = jnp.asarray(examples.tokens).at[0, 3].set(10 ** 6)
    rows = (tokens, jnp.asarray(examples.token_mask), jnp.asarray(examples.loss_mask))
    new_params, recorded, metrics = run_step(recording_step, params, rows)
    assert_trees_identical(new_params, params)
    for leaf in jax.tree.leaves(recorded):  # the optimizer state did not take the NaN gradient
        assert not np.any(leaf)
    assert float(metrics["finite"]) == 0.0 and float(metrics["nonfinite_loss"]) == 1.0
    assert float(metrics["nonfinite_grad"]) == 1.0
    with pytest.raises(FloatingPointError, match="loss = nan"):
        check_finite(metrics)
    # Clean rows through the same compiled step do change the parameters.
    clean = (jnp.asarray(examples.tokens),) + rows[1:]
    new_params, _, metrics = run_step(recording_step, params, clean)
    assert float(metrics["finite"]) == 1.0 and recording_step.num_compiles == 1
    assert any(not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(new_params),
                                                         jax.tree.leaves(params)))


def assert_trees_identical(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_sft_memorises_completions_for_greedy_decoding(model):
    graphdef, params = model
    examples = sft_examples(TOKENIZER, PAIRS, PlainFormat(), MAX_LEN)
    # 3 examples in batches of 2: 2 updates per epoch, the second with one masked filler row.
    config = SFTConfig(optim=MEMORISE_OPTIM, batch_size=2, epochs=40, max_len=MAX_LEN,
                       log_every=1)
    logs = []
    trained = run_sft(graphdef, params, examples, config, jax.random.key(0),
                      log_fn=lambda update, metrics: logs.append((update, metrics)))
    assert [update for update, _ in logs] == list(range(1, 81))
    tokens = [m["num_tokens"] for _, m in logs]
    assert all(tokens[2 * e] + tokens[2 * e + 1] == 13 for e in range(40))  # each row once
    assert logs[-1][1]["loss"] < 0.05 < logs[0][1]["loss"]
    sampler = Sampler(nnx.merge(graphdef, trained))
    prompts = [TOKENIZER.encode(PlainFormat().first(prompt)) for prompt, _ in PAIRS]
    sampling = SamplingConfig(greedy=True, max_new_tokens=8, stop_token_ids=(EOS,), pad_id=PAD)
    generation = sampler.generate(prompts, jax.random.key(1), sampling)
    assert generation.output.to_lists() == [TOKENIZER.encode(c) + [EOS] for _, c in PAIRS]
    # The input parameters were not donated, and they decode something else.
    sampler.set_state(params)
    untrained = sampler.generate(prompts, jax.random.key(1), sampling)
    assert untrained.output.to_lists() != generation.output.to_lists()
    assert all(m["nonfinite_updates"] == 0 for _, m in logs)
    with pytest.raises(ValueError, match="max_len"):
        run_sft(graphdef, params, examples, dataclasses.replace(config, max_len=32), None)


def test_run_sft_reports_skipped_updates_between_logs(model):
    graphdef, params = model
    examples = sft_examples(TOKENIZER, PAIRS, PlainFormat(), MAX_LEN)
    # The memorisation test's optimizer and batch shape: run_sft reuses its compiled step.
    config = SFTConfig(optim=MEMORISE_OPTIM, batch_size=2, epochs=1, max_len=MAX_LEN,
                       log_every=10)
    key = jax.random.key(5)
    first = int(next(iter(sft_batches(len(examples), config, key)))[0][0])
    # Poison an example of the first update only: the last update (the one reported) is
    # finite, so only the running count can reveal the skipped one.
    tokens = examples.tokens.copy()
    tokens[first, 3] = 10 ** 6
    poisoned = dataclasses.replace(examples, tokens=tokens)
    logs = []
    with pytest.raises(FloatingPointError, match="1 of the first 2 updates"):
        run_sft(graphdef, params, poisoned, config, key, log_fn=lambda u, m: logs.append((u, m)))
    assert [u for u, _ in logs] == [2] and logs[0][1]["finite"] == 1.0
    assert logs[0][1]["nonfinite_updates"] == 1.0


def test_sft_batches_cover_every_example_once_per_epoch():
    config = SFTConfig(batch_size=2, steps=5, max_len=MAX_LEN)
    batches = list(sft_batches(3, config, jax.random.key(3)))
    assert len(batches) == 5
    assert all(rows.shape == (2,) and real.shape == (2,) for rows, real in batches)
    for epoch in (batches[0:2], batches[2:4]):
        real_rows = [int(r) for rows, real in epoch for r in rows[real]]
        assert sorted(real_rows) == [0, 1, 2]
        assert [int(real.sum()) for _, real in epoch] == [2, 1]
    assert list(sft_batches(3, config, jax.random.key(3)))[0][0].tolist() == batches[0][0].tolist()
    assert len(list(sft_batches(3, dataclasses.replace(config, steps=None, epochs=3),
                                jax.random.key(0)))) == 6


def test_sft_config_validation():
    with pytest.raises(ValueError, match="exactly one of steps and epochs"):
        SFTConfig(steps=10, epochs=1)
    with pytest.raises(ValueError, match="exactly one of steps and epochs"):
        SFTConfig()
    with pytest.raises(ValueError, match="batch_size"):
        SFTConfig(steps=1, batch_size=0)
    with pytest.raises(ValueError, match="optim"):
        SFTConfig(steps=1, optim={"learning_rate": 1e-3})


def test_revision_prompts_are_laid_out_like_the_rollout_history():
    from mtrl.data.demonstrations import Revision
    from mtrl.training.sft.sft import prompt_token_ids
    fmt = PlainFormat()
    revision = Revision("task", (("first try", "it failed"),))
    ids = prompt_token_ids(TOKENIZER, revision, fmt)
    expected = (TOKENIZER.encode(fmt.first("task")) + TOKENIZER.encode("first try") + [EOS]
                + TOKENIZER.encode(fmt.next("it failed", True)))
    assert ids == expected
    examples = sft_examples(TOKENIZER, [(revision, "fixed"), ("task", "x")], fmt, 64)
    row = examples.tokens[0]
    k = len(expected)
    np.testing.assert_array_equal(row[:k], expected)
    # Only the revision (and its eos) is trained; the earlier attempt is context.
    assert not examples.loss_mask[0, :k].any()
    assert examples.loss_mask[0].sum() == len("fixed") + 1
    with pytest.raises(ValueError, match="exchange"):
        Revision("task", ())


def test_sft_batches_by_length_group_hold_one_group_and_cover_each_example():
    from mtrl.training.sft.sft import length_buckets
    mask = np.zeros((7, 300), bool)
    for row, length in enumerate([10, 70, 200, 64, 65, 300, 128]):
        mask[row, :length] = True
    buckets = length_buckets(mask, 300)
    np.testing.assert_array_equal(buckets, [64, 128, 256, 64, 128, 300, 128])
    config = SFTConfig(batch_size=2, epochs=2, max_len=300)
    batches = list(sft_batches(7, config, jax.random.key(0), buckets))
    # 64: 2 rows -> 1 batch, 128: 3 -> 2, 256: 1, 300: 1 -> 5 batches per epoch.
    assert len(batches) == 10
    for rows, real in batches:
        assert len({int(buckets[r]) for r in rows[real]}) == 1
    seen = sorted(int(r) for rows, real in batches[:5] for r in rows[real])
    assert seen == list(range(7))
    with pytest.raises(ValueError, match="groups"):
        next(sft_batches(7, config, jax.random.key(0), buckets[:3]))
