"""The RL train step on a tiny transformer: log-probs, exact MAGRPO gradients, on-policy
ratios, the NaN guard, compile-once, learning behaviour; plus the train state and the
host loop of ppo_update.

Two compiled steps carry most tests (compiling is the slow part on CPU): separate agents
with PPO + k3 KL + AdamW, and shared parameters with MAGRPO's objective + an SGD that
records its gradient."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from mtrl.losses import KLPenaltyConfig, PolicyObjectiveConfig
from mtrl.models import PRESETS, Transformer
from mtrl.rollout.batch import RolloutBatch
from mtrl.training.policy.logprobs import sequence_logprobs
from mtrl.training.update.minibatch import PolicyMinibatch, policy_minibatch, take_rows
from mtrl.training.policy.optim import OptimConfig, make_optimizer, make_schedule
from mtrl.training.update.ppo_epochs import ppo_update
from mtrl.training.update.step_metrics import check_finite
from mtrl.training.policy.train_state import TrainState, agent_params, init_train_state
from mtrl.training.update.train_step import make_train_step

CONFIG = dataclasses.replace(PRESETS.get("tiny"), num_layers=1, hidden_size=32,
                             intermediate_size=64, head_dim=8, num_heads=4, num_kv_heads=2)
N, C, L = 2, 8, 16
REAL_ROWS = 6  # rows 6 and 7 are padding (no tokens), as in a power-of-two rollout batch
OPTIM = OptimConfig(learning_rate=1e-2, warmup_steps=0, max_grad_norm=1.0)
PPO = PolicyObjectiveConfig(loss="ppo", aggregation="token-mean",
                            kl=KLPenaltyConfig("k3", 0.05))
MAGRPO = PolicyObjectiveConfig(loss="reinforce", aggregation="seq-mean-token-sum")


def row_layout():
    """token_mask / loss_mask [C, L]: row c has a prompt of 3 + c % 3 tokens and a
    completion of 3 + c % 4 tokens, right-padded; padding rows are empty."""
    token_mask = np.zeros((C, L), bool)
    loss_mask = np.zeros((C, L), bool)
    for c in range(REAL_ROWS):
        prompt, completion = 3 + c % 3, 3 + c % 4
        token_mask[c, :prompt + completion] = True
        loss_mask[c, prompt:prompt + completion] = True
    return token_mask, loss_mask


ROW_ADVANTAGE = np.array([[1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 0.0, 0.0],
                          [-1.0, 1.5, -0.5, 1.0, -2.0, 0.7, 0.0, 0.0]], np.float32)  # [N, C]


@pytest.fixture(scope="module")
def setup():
    graphdef, params0 = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(0)))
    _, params1 = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(1)))
    token_mask, loss_mask = row_layout()
    rng = np.random.default_rng(0)
    tokens = np.where(token_mask, rng.integers(0, 256, (N, C, L)), 0).astype(np.int32)
    return graphdef, [params0, params1], jnp.asarray(tokens), token_mask, loss_mask


def make_minibatch(graphdef, params_list, tokens, token_mask, loss_mask,
                   row_advantage=ROW_ADVANTAGE):
    """On-policy rows: old log-probs are the current policy's, 0 off the loss mask."""
    token_mask = jnp.broadcast_to(token_mask, (N, C, L))
    loss_mask = jnp.broadcast_to(loss_mask, (N, C, L))
    old = jnp.stack([sequence_logprobs(graphdef, params_list[a], tokens[a], token_mask[a])
                     for a in range(N)])
    return PolicyMinibatch(
        tokens=tokens, token_mask=token_mask, loss_mask=loss_mask,
        old_logprobs=jnp.where(loss_mask, old, 0.0),
        advantages=jnp.asarray(row_advantage)[:, :, None] * loss_mask,
        turn_index=jnp.where(loss_mask, 1, 0).astype(jnp.int32))


@pytest.fixture(scope="module")
def minibatch(setup):
    graphdef, params_list, tokens, token_mask, loss_mask = setup
    return make_minibatch(graphdef, params_list, tokens, token_mask, loss_mask)


@pytest.fixture(scope="module")
def separate_step(setup):
    return make_train_step(setup[0], PPO, make_optimizer(OPTIM), num_agents=N, shared=False,
                           learning_rate_fn=make_schedule(OPTIM))


def recording_sgd(learning_rate):
    """θ ← θ − lr·g, keeping the last gradient g as the optimizer state (to read it back)."""
    return optax.GradientTransformation(
        init=lambda params: jax.tree.map(jnp.zeros_like, params),
        update=lambda grads, state, params=None: (
            jax.tree.map(lambda g: -learning_rate * g, grads), grads))


SHARED_LR = 0.05


@pytest.fixture(scope="module")
def shared_step(setup):
    """Shared parameters, MAGRPO's exact objective, plain SGD that records its gradient."""
    return make_train_step(setup[0], MAGRPO, recording_sgd(SHARED_LR), num_agents=N, shared=True)


def fresh_state(params_list, *, shared, keep_reference):
    """A state for separate_step (AdamW) or shared_step (recording SGD)."""
    if shared:
        return init_train_state([params_list[0]] * N, recording_sgd(SHARED_LR), shared=True,
                                keep_reference=keep_reference)
    return init_train_state(params_list, make_optimizer(OPTIM), shared=False,
                            keep_reference=keep_reference)


def host_copy(tree):
    return jax.tree.map(lambda x: np.array(x), tree)


def assert_trees_identical(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


# -- log-probabilities ------------------------------------------------------------------


def test_sequence_logprobs_equals_manual_gather(setup):
    graphdef, params_list, tokens, token_mask, _ = setup
    tokens, token_mask = np.array(tokens[0]), token_mask.copy()
    # Row 5 left-padded instead: its first real token has no predecessor.
    n = token_mask[5].sum()
    tokens[5] = np.roll(tokens[5], L - n)
    token_mask[5] = np.roll(token_mask[5], L - n)
    logp = np.asarray(sequence_logprobs(graphdef, params_list[0], jnp.asarray(tokens),
                                        jnp.asarray(token_mask)))
    logits = np.asarray(nnx.merge(graphdef, params_list[0])(jnp.asarray(tokens),
                                                            token_mask=jnp.asarray(token_mask)),
                        np.float64)
    log_softmax = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1,
                                  keepdims=True)) - logits.max(-1, keepdims=True)
    expected = np.zeros((C, L))
    for c in range(C):
        for i in range(1, L):
            if token_mask[c, i] and token_mask[c, i - 1]:
                expected[c, i] = log_softmax[c, i - 1, tokens[c, i]]
    assert logp.shape == (C, L) and logp.dtype == np.float32
    np.testing.assert_allclose(logp, expected, atol=2e-5)
    assert np.all(logp[:, 0] == 0) and np.all(logp[~token_mask] == 0)
    assert np.all(logp[token_mask & np.roll(token_mask, 1, axis=1)][1:] < 0)


def test_sequence_logprobs_checks_shapes(setup):
    graphdef, params_list, tokens, token_mask, _ = setup
    with pytest.raises(ValueError, match=r"\[B, L\]"):
        sequence_logprobs(graphdef, params_list[0], tokens, jnp.asarray(token_mask))
    with pytest.raises(ValueError, match="token_mask shape"):
        sequence_logprobs(graphdef, params_list[0], tokens[0], jnp.asarray(token_mask[:, :4]))


# -- train state ------------------------------------------------------------------------


def adam_count(opt_state):
    return optax.tree_utils.tree_get(opt_state, "ScaleByAdamState").count


def test_init_train_state_layouts(setup):
    graphdef, params_list, *_ = setup
    optimizer = make_optimizer(OPTIM)
    separate = init_train_state(params_list, optimizer, shared=False, keep_reference=True)
    assert separate.num_agents == N and not separate.shared and int(separate.step) == 0
    for a in range(N):
        assert_trees_identical(agent_params(separate, a), params_list[a])
        assert_trees_identical(jax.tree.map(lambda x: x[a], separate.ref_params), params_list[a])
    assert adam_count(separate.opt_state).shape == (N,)
    shared = init_train_state([params_list[0]] * N, optimizer, shared=True, keep_reference=False)
    assert shared.ref_params is None and shared.shared
    assert_trees_identical(agent_params(shared, 1), params_list[0])
    assert adam_count(shared.opt_state).shape == ()
    with pytest.raises(ValueError, match="differ"):
        init_train_state(params_list, optimizer, shared=True, keep_reference=False)
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        agent_params(separate, 2)


# -- the step ---------------------------------------------------------------------------


def test_first_update_is_on_policy_and_compiles_once(setup, minibatch, separate_step):
    graphdef, params_list, *_ = setup
    state = fresh_state(params_list, shared=False, keep_reference=True)
    state, metrics = ppo_update(separate_step, state, minibatch, epochs=1, minibatches=1,
                                key=jax.random.key(0))
    assert len(metrics) == 1 and separate_step.num_compiles == 1
    m = {name: float(value) for name, value in metrics[0].items()}
    for a in ("", "/agent0", "/agent1"):
        for name in ("ratio_mean", "ratio_min", "ratio_max"):
            assert m[name + a] == pytest.approx(1.0, abs=1e-5), name + a
        assert abs(m["approx_kl" + a]) < 1e-6 and abs(m["kl" + a]) < 1e-6
        assert m["finite" + a] == 1.0 and m["nonfinite_loss" + a] == 0.0
        assert m["clip_frac" + a] == 0.0
    assert m["learning_rate"] == pytest.approx(1e-2)
    loss_tokens = int(np.sum(minibatch.loss_mask[0]))
    assert m["num_tokens/agent0"] == loss_tokens and m["num_tokens"] == N * loss_tokens
    assert m["loss"] == pytest.approx((m["loss/agent0"] + m["loss/agent1"]) / 2, rel=1e-6)
    assert int(state.step) == 1
    # The same shapes again: no new trace, and the ratio has moved off 1.
    state, again = separate_step(state, minibatch)
    assert separate_step.num_compiles == 1
    assert int(state.step) == 2 and float(again["ratio_mean"]) != 1.0


def completion_logprob(graphdef, params, tokens, token_mask, loss_mask):
    """[C] Σ_t log π(y_t) over each row's completion."""
    logp = sequence_logprobs(graphdef, params, tokens, jnp.asarray(token_mask))
    return np.asarray(jnp.sum(jnp.where(loss_mask, logp, 0.0), axis=-1))


@pytest.mark.parametrize("shared", [False, True])
def test_updates_raise_logprob_of_positive_advantage_rows(setup, minibatch, separate_step,
                                                          shared_step, shared):
    graphdef, params_list, tokens, token_mask, loss_mask = setup
    step = shared_step if shared else separate_step
    state = fresh_state(params_list, shared=shared, keep_reference=not shared)
    before = [completion_logprob(graphdef, agent_params(state, a), tokens[a], token_mask,
                                 loss_mask) for a in range(N)]
    for _ in range(4):
        state, metrics = step(state, minibatch)
        check_finite(metrics)
    assert int(state.step) == 4 and step.num_compiles == 1
    for a in range(N):
        after = completion_logprob(graphdef, agent_params(state, a), tokens[a], token_mask,
                                   loss_mask)
        change = (after - before[a])[:REAL_ROWS]
        advantage = ROW_ADVANTAGE[a, :REAL_ROWS]
        assert np.all(change[advantage > 0] > 0), (a, change, advantage)
        assert np.all(change[advantage < 0] < 0), (a, change, advantage)


def magrpo_by_hand(graphdef, params, tokens, token_mask, loss_mask, advantage):
    """−mean_c A_c Σ_t log π(y_ct) over rows with a completion, from log_softmax."""
    logits = nnx.merge(graphdef, params)(tokens, token_mask=token_mask)
    log_softmax = jax.nn.log_softmax(logits[:, :-1], axis=-1)
    logp = jnp.take_along_axis(log_softmax, tokens[:, 1:, None], axis=-1)[..., 0]
    per_row = jnp.sum(jnp.where(loss_mask[:, 1:], logp, 0.0), axis=-1)
    has_completion = jnp.any(loss_mask, axis=-1)
    return -jnp.sum(jnp.where(has_completion, advantage * per_row, 0.0)) / jnp.sum(has_completion)


MAGRPO_BY_HAND = jax.jit(jax.value_and_grad(magrpo_by_hand, argnums=1), static_argnums=0)


def assert_gradients_close(got, want):
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5 * float(np.max(np.abs(w))))


@pytest.mark.parametrize("shared", [False, True])
def test_magrpo_gradient_is_exact(setup, minibatch, shared_step, shared):
    graphdef, params_list, tokens, token_mask, loss_mask = setup
    agents = [params_list[0]] * N if shared else params_list
    if shared:
        step, state = shared_step, fresh_state(params_list, shared=True, keep_reference=False)
    else:
        step = make_train_step(graphdef, MAGRPO, recording_sgd(0.0), num_agents=N, shared=False)
        state = init_train_state(agents, recording_sgd(0.0), shared=False, keep_reference=False)
    state, metrics = step(state, minibatch)
    values, grads = zip(*[MAGRPO_BY_HAND(graphdef, agents[a], tokens[a], jnp.asarray(token_mask),
                                         jnp.asarray(loss_mask), jnp.asarray(ROW_ADVANTAGE[a]))
                          for a in range(N)])
    for a in range(N):
        # abs: the ±A terms cancel, so the objective is small next to its parts.
        assert float(metrics[f"loss/agent{a}"]) == pytest.approx(float(values[a]), abs=1e-5)
    if shared:  # one gradient, of the mean of the agents' objectives; one SGD step with it
        mean_grad = jax.tree.map(lambda g0, g1: (g0 + g1) / 2, *grads)
        assert_gradients_close(state.opt_state, mean_grad)
        assert float(metrics["loss"]) == pytest.approx(float(sum(values)) / N, abs=1e-5)
        stepped = jax.tree.map(lambda p, g: p - SHARED_LR * g, agents[0], state.opt_state)
        for got, want in zip(jax.tree.leaves(state.params), jax.tree.leaves(stepped)):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    else:
        for a in range(N):
            assert_gradients_close(jax.tree.map(lambda x: x[a], state.opt_state), grads[a])


def test_nonfinite_loss_skips_the_update_separate(setup, minibatch, separate_step):
    graphdef, params_list, *_ = setup
    state = fresh_state(params_list, shared=False, keep_reference=True)
    before = host_copy((state.params, state.opt_state, state.ref_params))
    first = int(np.argmax(minibatch.loss_mask[1, 0]))
    poisoned = minibatch.replace(advantages=minibatch.advantages.at[1, 0, first].set(jnp.inf))
    state, metrics = separate_step(state, poisoned)
    assert separate_step.num_compiles == 1
    assert_trees_identical((state.params, state.opt_state, state.ref_params), before)
    assert int(state.step) == 0
    assert float(metrics["finite"]) == 0.0 and float(metrics["nonfinite_loss"]) == 1.0
    assert float(metrics["nonfinite_loss/agent1"]) == 1.0
    assert float(metrics["nonfinite_loss/agent0"]) == 0.0
    assert float(metrics["nonfinite_grad/agent1"]) == 1.0
    with pytest.raises(FloatingPointError, match="loss/agent1") as error:
        check_finite(metrics)
    assert "agent0" not in str(error.value) and "skipped" in str(error.value)
    with pytest.raises(FloatingPointError, match=r"update 1 of this batch: .*loss/agent1"):
        check_finite([{"finite": 1.0, "loss": 0.5}, metrics])
    # The guarded state is intact and trains on.
    state, metrics = separate_step(state, minibatch)
    check_finite(metrics)
    assert int(state.step) == 1


def test_nan_input_skips_the_update_shared(setup, minibatch, shared_step):
    graphdef, params_list, *_ = setup
    state = fresh_state(params_list, shared=True, keep_reference=False)
    before = host_copy((state.params, state.opt_state))
    first = int(np.argmax(minibatch.loss_mask[0, 2]))
    poisoned = minibatch.replace(advantages=minibatch.advantages.at[0, 2, first].set(jnp.nan))
    state, metrics = shared_step(state, poisoned)
    assert_trees_identical((state.params, state.opt_state), before)
    assert int(state.step) == 0 and float(metrics["finite"]) == 0.0
    assert float(metrics["nonfinite_loss/agent0"]) == 1.0
    assert float(metrics["nonfinite_loss/agent1"]) == 0.0
    assert float(metrics["nonfinite_grad"]) == 1.0
    with pytest.raises(FloatingPointError, match="loss/agent0 = nan"):
        check_finite(metrics)


def test_step_rejects_mismatched_inputs(setup, minibatch):
    graphdef, params_list, *_ = setup
    # A fresh step object: a failed trace still counts as one in num_compiles.
    step = make_train_step(graphdef, PPO, make_optimizer(OPTIM), num_agents=N, shared=False)
    with pytest.raises(ValueError, match="3 agents"):
        step(fresh_state(params_list, shared=False, keep_reference=True),
             jax.tree.map(lambda x: jnp.concatenate([x, x[:1]]), minibatch))
    kl_step = make_train_step(graphdef, PPO, make_optimizer(OPTIM), num_agents=N, shared=False)
    with pytest.raises(ValueError, match="keep_reference"):
        kl_step(fresh_state(params_list, shared=False, keep_reference=False), minibatch)
    with pytest.raises(ValueError, match="loss_mask must be bool"):
        minibatch.replace(loss_mask=minibatch.loss_mask.astype(jnp.int32)).validate()
    with pytest.raises(ValueError, match="num_agents"):
        make_train_step(graphdef, PPO, make_optimizer(OPTIM), num_agents=0, shared=False)


# -- minibatches and the host loop ---------------------------------------------------------


def test_policy_minibatch_from_rollout_batch(minibatch):
    batch = RolloutBatch(
        tokens=minibatch.tokens, token_mask=minibatch.token_mask, loss_mask=minibatch.loss_mask,
        old_logprobs=minibatch.old_logprobs, turn_index=minibatch.turn_index,
        row_turn=jnp.zeros(C, jnp.int32), row_node=jnp.zeros(C, jnp.int32),
        row_sample=jnp.zeros(C, jnp.int32), truncated=jnp.zeros((N, C), bool), rewards=(),
        exists=(), expanded=(), joint_index=jnp.zeros((1, N), jnp.int32), components={},
        num_generations=1, joint_mode="align")
    full = policy_minibatch(batch, minibatch.advantages)
    assert_trees_identical(full, minibatch)
    part = policy_minibatch(batch, minibatch.advantages, rows=[5, 1])
    assert part.validate(N) == (N, 2, L)
    np.testing.assert_array_equal(part.tokens[:, 0], minibatch.tokens[:, 5])
    np.testing.assert_array_equal(part.advantages[:, 1], minibatch.advantages[:, 1])
    with pytest.raises(ValueError, match="advantages shape"):
        policy_minibatch(batch, minibatch.advantages[:, :4])


class RecordingStep:
    """Stands in for a TrainStep: records which rows each update received."""

    num_agents = N

    def __init__(self):
        self.calls = []

    def __call__(self, state, minibatch):
        self.calls.append(np.asarray(minibatch.tokens[0, :, 0]))
        return state + 1, {"finite": 1.0}


def test_ppo_update_deals_shuffled_rows_into_static_minibatches(minibatch):
    # Tag every row by writing its index into its first token.
    tagged = minibatch.replace(tokens=minibatch.tokens.at[:, :, 0].set(jnp.arange(C)))
    recorder = RecordingStep()
    state, metrics = ppo_update(recorder, 0, tagged, epochs=3, minibatches=2,
                                key=jax.random.key(7))
    assert state == 6 and len(metrics) == 6
    epochs = [recorder.calls[2 * e:2 * e + 2] for e in range(3)]
    for calls in epochs:
        assert all(rows.shape == (C // 2,) for rows in calls)
        real = [r for rows in calls for r in rows if r < REAL_ROWS]
        assert sorted(real) == list(range(REAL_ROWS))  # every real row once per epoch
        assert [sum(r < REAL_ROWS for r in rows) for rows in calls] == [3, 3]  # spread evenly
    orders = [tuple(np.concatenate(calls)) for calls in epochs]
    assert len(set(orders)) > 1  # epochs use different permutations
    replay = RecordingStep()
    ppo_update(replay, 0, tagged, epochs=3, minibatches=2, key=jax.random.key(7))
    assert all(np.array_equal(a, b) for a, b in zip(recorder.calls, replay.calls))
    # Eight minibatches of one row: the two padding-only ones are skipped.
    recorder = RecordingStep()
    state, _ = ppo_update(recorder, 0, tagged, epochs=1, minibatches=8, key=jax.random.key(0))
    assert state == REAL_ROWS and sorted(int(r[0]) for r in recorder.calls) == list(range(6))
    with pytest.raises(ValueError, match="equal minibatches"):
        ppo_update(recorder, 0, tagged, epochs=1, minibatches=3, key=jax.random.key(0))
    with pytest.raises(ValueError, match="epochs"):
        ppo_update(recorder, 0, tagged, epochs=0, minibatches=1, key=jax.random.key(0))


def test_take_rows_checks_rank(minibatch):
    assert take_rows(minibatch, [0, 3, 3]).tokens.shape == (N, 3, L)
    with pytest.raises(ValueError, match="1-d"):
        take_rows(minibatch, [[0]])


def test_train_state_is_a_pytree_with_static_layout(setup):
    state = fresh_state(setup[1], shared=False, keep_reference=False)
    leaves, treedef = jax.tree.flatten(state)
    rebuilt = jax.tree.unflatten(treedef, leaves)
    assert isinstance(rebuilt, TrainState) and rebuilt.num_agents == N and not rebuilt.shared
    assert all(isinstance(leaf, jax.Array) for leaf in leaves)
