"""The zero-advantage filter (train.drop_zero_advantage) on tree batches: which rows are
kept, how they are padded, and that MAGRPO's gradient on the kept rows is the full
batch's, rescaled by the row counts. It is the function the trainer calls."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from mtrl.losses import PolicyObjectiveConfig
from mtrl.models import PRESETS, Transformer
from mtrl.training.update.minibatch import PolicyMinibatch
from mtrl.training.update.row_filter import informative_rows, keep_informative_groups
from mtrl.training.policy.train_state import init_train_state
from mtrl.training.update.train_step import make_train_step

CONFIG = dataclasses.replace(PRESETS.get("tiny"), num_layers=1, hidden_size=32,
                             intermediate_size=64, head_dim=8, num_heads=4, num_kv_heads=2)
N, C, L = 2, 16, 12
MAGRPO = PolicyObjectiveConfig(loss="reinforce", aggregation="seq-mean-token-sum")


def batch(row_advantage: np.ndarray, real_rows: int = 14) -> PolicyMinibatch:
    """Rows: 4 prompt tokens, 5 completion tokens; rows >= real_rows are padding."""
    token_mask = np.zeros((N, C, L), bool)
    loss_mask = np.zeros((N, C, L), bool)
    token_mask[:, :real_rows, :9] = True
    loss_mask[:, :real_rows, 4:9] = True
    tokens = np.where(token_mask, np.random.default_rng(0).integers(0, 256, (N, C, L)), 0)
    return PolicyMinibatch(
        tokens=jnp.asarray(tokens, jnp.int32), token_mask=jnp.asarray(token_mask),
        loss_mask=jnp.asarray(loss_mask), old_logprobs=jnp.zeros((N, C, L), jnp.float32),
        advantages=jnp.asarray(row_advantage[:, :, None] * loss_mask, jnp.float32),
        turn_index=jnp.asarray(loss_mask, jnp.int32))


def advantages_with_signal_in(rows_agent0, rows_agent1) -> np.ndarray:
    adv = np.zeros((N, C), np.float32)
    adv[0, rows_agent0] = np.linspace(-1.0, 1.5, len(rows_agent0))
    adv[1, rows_agent1] = np.linspace(0.7, -0.9, len(rows_agent1))
    return adv


def test_a_row_is_informative_if_any_agent_has_a_nonzero_advantage():
    adv = advantages_with_signal_in([1, 4, 9], [4, 11])
    # A non-zero advantage on a padding row (no loss token) is not a signal.
    adv[0, 15] = 3.0
    keep = informative_rows(batch(adv))
    assert keep.tolist() == [c in (1, 4, 9, 11) for c in range(C)]


def test_kept_rows_are_padded_to_a_power_of_two_with_masked_copies():
    adv = advantages_with_signal_in([0, 2, 3, 5, 7, 8, 10, 12, 13], [2])
    full = batch(adv)
    kept, count = keep_informative_groups(full)
    assert count == 9
    assert kept.tokens.shape == (N, 16, L)  # 9 rows -> 16
    np.testing.assert_array_equal(kept.tokens[:, :9], full.tokens[:, [0, 2, 3, 5, 7, 8, 10, 12, 13]])
    assert not np.asarray(kept.loss_mask[:, 9:]).any()
    assert np.asarray(kept.loss_mask[:, :9]).any(axis=2).all()

    few, count = keep_informative_groups(batch(advantages_with_signal_in([3], [6])))
    assert count == 2 and few.tokens.shape == (N, 8, L)  # at least min_rows


def test_no_informative_row_means_no_update():
    kept, count = keep_informative_groups(batch(np.zeros((N, C), np.float32)))
    assert kept is None and count == 0


def recording_sgd():
    """A zero-step optimizer that keeps the last gradient as its state."""
    return optax.GradientTransformation(
        init=lambda params: jax.tree.map(jnp.zeros_like, params),
        update=lambda grads, state, params=None: (jax.tree.map(jnp.zeros_like, grads), grads))


def test_magrpo_gradient_on_kept_rows_is_the_full_gradient_rescaled():
    """seq-mean-token-sum: the zero-advantage rows add nothing to the numerator, so
    grad(kept) * kept_rows == grad(full) * real_rows, agent by agent."""
    graphdef, params0 = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(0)))
    _, params1 = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(1)))
    step = make_train_step(graphdef, MAGRPO, recording_sgd(), num_agents=N, shared=False)
    adv = advantages_with_signal_in([0, 3, 5, 6, 9], [3, 12])
    full = batch(adv, real_rows=14)
    kept, count = keep_informative_groups(full)
    grads = []
    for rows in (full, kept):
        state = init_train_state([params0, params1], recording_sgd(), shared=False,
                                 keep_reference=False)
        state, _ = step(state, rows)
        grads.append(state.opt_state)
    assert count == 6
    for g_full, g_kept in zip(jax.tree.leaves(grads[0]), jax.tree.leaves(grads[1])):
        np.testing.assert_allclose(np.asarray(g_kept) * count, np.asarray(g_full) * 14,
                                   rtol=2e-4, atol=1e-6)
    assert any(np.abs(np.asarray(g)).max() > 0 for g in jax.tree.leaves(grads[1]))


def test_the_trainer_calls_this_filter():
    from mtrl.training.update import stage  # the trainer's update stage
    assert stage.keep_informative_groups is keep_informative_groups
