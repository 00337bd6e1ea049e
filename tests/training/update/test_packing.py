"""Packed and tree-packed training equal the padded rows: per-row log-probabilities, the
loss and the gradients, on rollout trees (align and cross, termination, T = 2 and 3, two
agents) built by the scripted policy and environment."""

import dataclasses
import types

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from mtrl.losses import KLPenaltyConfig, PolicyObjectiveConfig
from mtrl.models import PRESETS, Transformer
from mtrl.rollout import RolloutConfig, make_batch
from mtrl.training.policy.logprobs import sequence_logprobs
from mtrl.training.update.minibatch import policy_minibatch
from mtrl.training.update.packing import budget_for, pack_rows, packed_logprobs
from mtrl.training.policy.train_state import init_train_state
from mtrl.training.update.train_step import make_train_step, zero_advantage_is_exact
from tests.rollout.test_generator import run

CONFIG = dataclasses.replace(PRESETS.get("tiny"), num_layers=1, hidden_size=32,
                             intermediate_size=64, head_dim=8, num_heads=4, num_kv_heads=2)
PPO_KL = PolicyObjectiveConfig(loss="ppo", aggregation="seq-mean-token-sum",
                               kl=KLPenaltyConfig("k3", 0.05))
TREES = [("align", 2), ("cross", 2), ("align", 3), ("cross", 3)]


def recording_sgd():
    """Keeps the last gradient as its state (to read it back); the update is −0.01·g."""
    return optax.GradientTransformation(
        init=lambda params: jax.tree.map(jnp.zeros_like, params),
        update=lambda grads, state, params=None: (jax.tree.map(lambda g: -0.01 * g, grads),
                                                  grads))


@pytest.fixture(scope="module")
def models():
    graphdef, params0 = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(0)))
    _, params1 = nnx.split(Transformer(CONFIG, rngs=nnx.Rngs(1)))
    return graphdef, [params0, params1]


def tree_minibatch(mode, turns, models, seed=0):
    """Rows of a scripted tree (termination on, some rows dropped from the loss) with
    on-policy old log-probs and random per-row advantages."""
    graphdef, params = models
    config = RolloutConfig(num_turns=turns, num_generations=2, num_agents=2, joint_mode=mode,
                           termination_threshold=0.5, max_new_tokens=16, max_context=160)
    tree, _ = run(config, tasks=(0, 1, 2))
    batch = make_batch(tree, length=config.max_context)
    rng = np.random.default_rng(seed)
    row_adv = rng.normal(size=batch.tokens.shape[:2]).astype(np.float32)
    row_adv[:, ::5] = 0.0
    advantages = jnp.asarray(row_adv)[:, :, None] * batch.loss_mask
    rows = policy_minibatch(batch, advantages)
    old = jnp.stack([sequence_logprobs(graphdef, params[a], rows.tokens[a], rows.token_mask[a])
                     for a in range(2)])
    loss_mask = np.array(rows.loss_mask)
    loss_mask[1, 1] = False  # a row trained for agent 0 only
    return rows.replace(old_logprobs=jnp.where(rows.loss_mask, old, 0.0),
                        loss_mask=jnp.asarray(loss_mask)), tree


@pytest.mark.parametrize("mode,turns", TREES)
def test_packed_logprobs_equal_row_logprobs(models, mode, turns):
    graphdef, params = models
    rows, tree = tree_minibatch(mode, turns, models)
    assert any(r.expanded.any() and not r.expanded.all() for r in tree.turns[:-1]), \
        "the tree should terminate some nodes early"
    for packing in ("rows", "tree"):
        packed = pack_rows(rows.tokens, rows.token_mask, rows.loss_mask, packing)
        for a in range(2):
            want = sequence_logprobs(graphdef, params[a], rows.tokens[a], rows.token_mask[a])
            one = jax.tree.map(lambda x: x[a], packed)
            got = packed_logprobs(nnx.merge(graphdef, params[a]), one)
            trained = np.asarray(rows.loss_mask[a])
            assert np.asarray(one.predicted)[trained].all()
            np.testing.assert_allclose(np.asarray(got)[trained], np.asarray(want)[trained],
                                       rtol=1e-5, atol=1e-5)
    rows_nodes = int(pack_rows(rows.tokens, rows.token_mask, rows.loss_mask,
                               "rows").token_mask.sum())
    tree_nodes = int(pack_rows(rows.tokens, rows.token_mask, rows.loss_mask,
                               "tree").token_mask.sum())
    assert tree_nodes < rows_nodes


# Each case compiles three train steps: one align and one cross tree cover T = 2 and 3.
@pytest.mark.parametrize("mode,turns", [("align", 3), ("cross", 2)])
def test_packed_loss_and_gradients_equal_padded(models, mode, turns):
    graphdef, params = models
    rows, _ = tree_minibatch(mode, turns, models, seed=turns)
    results = {}
    for packing in ("none", "rows", "tree"):
        step = make_train_step(graphdef, PPO_KL, recording_sgd(), num_agents=2, shared=False,
                               packing=packing, min_budget=64 if packing == "tree" else 0)
        state = init_train_state(params, recording_sgd(), shared=False, keep_reference=True)
        new_state, metrics = step(state, rows)
        results[packing] = (jax.device_get(metrics), jax.device_get(new_state.opt_state))
    want_metrics, want_grads = results["none"]
    for packing in ("rows", "tree"):
        metrics, grads = results[packing]
        assert set(metrics) == set(want_metrics) and "kl/agent1" in metrics
        for name, want in want_metrics.items():
            np.testing.assert_allclose(metrics[name], want, rtol=1e-5, atol=1e-6,
                                       err_msg=f"{packing} {name}")
        for got, want in zip(jax.tree.leaves(grads), jax.tree.leaves(want_grads)):
            np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-6, err_msg=packing)
        assert np.abs(jax.tree.leaves(want_grads)[0]).max() > 0


def test_tree_layout_is_the_trie_of_the_rows():
    """Nodes = distinct prefixes; attend_end marks exactly each node's ancestors."""
    rows = [[5, 6, 7], [5, 6, 8, 9], [5, 6, 7, 1], [4], [5, 2], [5, 6, 8, 9]]
    b, length = len(rows), 6
    tokens = np.zeros((1, b, length), np.int32)
    mask = np.zeros((1, b, length), bool)
    for r, row in enumerate(rows):
        tokens[0, r, :len(row)], mask[0, r, :len(row)] = row, True
    packed = pack_rows(tokens, mask, mask, "tree")
    prefixes = {tuple(row[:k]) for row in rows for k in range(1, len(row) + 1)}
    assert int(packed.token_mask.sum()) == len(prefixes)  # one bin holds them all here
    node_of = {}
    for r, row in enumerate(rows):
        for i in range(len(row)):
            node = int(packed.node_index[0, r, i])
            assert node_of.setdefault(tuple(row[:i + 1]), node) == node
    assert len(set(node_of.values())) == len(prefixes)
    end, depth = np.asarray(packed.attend_end[0, 0]), np.asarray(packed.positions[0, 0])
    for prefix, i in node_of.items():
        assert depth[i] == len(prefix) - 1
        for other, j in node_of.items():
            is_ancestor = prefix[:len(other)] == other
            assert (j <= i < end[j]) == is_ancestor, (prefix, other)


def test_rows_packing_fills_bins_and_checks_layout():
    lengths = [30, 20, 10, 40, 5]
    tokens = np.zeros((1, 5, 48), np.int32)
    mask = np.arange(48)[None, None, :] < np.asarray(lengths)[None, :, None]
    tokens[mask] = 1  # identical rows: packing "rows" must not share them
    packed = pack_rows(tokens, mask, mask, "rows")
    assert packed.tokens.shape[2] == 64 and int(packed.token_mask.sum()) == sum(lengths)
    assert packed.tokens.shape[1] == 2  # first-fit decreasing: 40+20, 30+10+5
    with pytest.raises(ValueError, match="right-padded"):
        pack_rows(tokens, mask[:, :, ::-1], mask[:, :, ::-1], "rows")
    with pytest.raises(ValueError, match="packing must be one of"):
        pack_rows(tokens, mask, mask, "trie")


def test_bucketed_shapes():
    assert [budget_for(n) for n in (1, 64, 65, 3000)] == [64, 64, 96, 3072]
    assert budget_for(10, min_budget=300) == 384
    with pytest.raises(ValueError, match="exceeds the largest bin"):
        budget_for(20000)


MAGRPO = PolicyObjectiveConfig(loss="reinforce", aggregation="seq-mean-token-sum")


def test_zero_advantage_rows_are_not_computed_and_change_nothing(models):
    """MAGRPO (no KL): rows with A = 0 leave the packed forward; the loss and gradients
    still equal the padded computation over every row."""
    graphdef, params = models
    rows, _ = tree_minibatch("align", 3, models, seed=5)
    assert zero_advantage_is_exact(MAGRPO) and not zero_advantage_is_exact(PPO_KL)
    results = {}
    for packing in ("none", "tree"):
        step = make_train_step(graphdef, MAGRPO, recording_sgd(), num_agents=2, shared=False,
                               packing=packing)
        state = init_train_state(params, recording_sgd(), shared=False, keep_reference=False)
        new_state, metrics = step(state, rows)
        results[packing] = (jax.device_get(metrics), jax.device_get(new_state.opt_state), step)
    full = pack_rows(rows.tokens, rows.token_mask, rows.loss_mask, "tree")
    assert results["tree"][2].last_packing["packed_tokens"] < int(full.token_mask.sum())
    for name in ("loss/agent0", "loss/agent1", "policy_loss", "num_tokens"):
        np.testing.assert_allclose(results["tree"][0][name], results["none"][0][name],
                                   rtol=1e-5, atol=1e-6, err_msg=name)
    for got, want in zip(jax.tree.leaves(results["tree"][1]), jax.tree.leaves(results["none"][1])):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-6)


def test_a_packed_minibatch_that_cannot_fit_is_refused_before_its_update(models):
    from mtrl.training.update.memory import packed_step_guard
    graphdef, params = models
    rows, _ = tree_minibatch("align", 2, models)
    train = types.SimpleNamespace(packing="tree", remat="none")
    seen = []
    fits = packed_step_guard(train, CONFIG, 2, available=1e12, backend="cpu")
    step = make_train_step(graphdef, PPO_KL, recording_sgd(), num_agents=2, shared=False,
                           packing="tree", memory_guard=lambda b, s: seen.append((b, s)) or
                           fits(b, s))
    state = init_train_state(params, recording_sgd(), shared=False, keep_reference=True)
    packed = pack_rows(rows.tokens, rows.token_mask, rows.loss_mask, "tree")
    step(state, rows)
    assert seen == [tuple(packed.tokens.shape[1:])]  # the bins the update ran on
    refuse = packed_step_guard(train, CONFIG, 2, available=1e3, backend="cpu")
    step = make_train_step(graphdef, PPO_KL, recording_sgd(), num_agents=2, shared=False,
                           packing="tree", memory_guard=refuse)
    state = init_train_state(params, recording_sgd(), shared=False, keep_reference=True)
    with pytest.raises(ValueError, match=r"^train step: a packed minibatch of 2 agents x "
                                         r"\d+ bins of \d+ tokens .*cannot fit; lower") as error:
        step(state, rows)
    assert "\n" not in str(error.value) and step.num_compiles == 0  # refused before tracing
