import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.credit.jitted import assert_trees_match, jitted, vmapped_and_looped
from mtrl.credit import (magrpo_advantages, row_advantages, termination_mask,
                         tree_advantages, tree_exists, tree_expanded, tree_returns)

GAMMA = 0.9


@functools.partial(jax.jit, static_argnames=("threshold", "num_turns", "mode", "agents",
                                             "gens", "estimator", "normalize_std"))
def pipeline(rewards, *, threshold, num_turns, mode="align", agents=2, gens=2,
             estimator="mean", normalize_std=False):
    """Expansion, existence, returns, advantages and per-agent credit in one compile."""
    expanded = tree_expanded(rewards, threshold, num_turns)
    exists = tree_exists(expanded)
    returns = tree_returns(rewards, expanded, GAMMA)
    advantages = tree_advantages(returns, exists, estimator=estimator,
                                 normalize_std=normalize_std)
    per_agent = magrpo_advantages(rewards, expanded, gamma=GAMMA, mode=mode, num_agents=agents,
                                  num_generations=gens, estimator=estimator,
                                  normalize_std=normalize_std)
    return dict(expanded=expanded, exists=exists, returns=returns, advantages=advantages,
                per_agent=per_agent)


def hand_tree():
    """T = 2, align, G = 2 (J = 2), P = 2 prompts, termination threshold 0.5.

    Prompt 0, turn 1: r = [1, 0], mean 0.5 is not strictly above 0.5 → expands.
    Prompt 1, turn 1: r = [1, 1], mean 1 > 0.5 → terminated; its turn-2 entries are
    never generated and hold garbage (NaN and 7) that must be ignored.
    """
    r1 = np.array([[1.0, 0.0], [1.0, 1.0]], np.float32)
    r2 = np.array([[[1.0, 0.0], [0.5, 0.5]], [[np.nan, 7.0], [7.0, 7.0]]], np.float32)
    return [r1, r2]


def test_hand_tree():
    out = pipeline(hand_tree(), threshold=0.5, num_turns=2)
    expanded, exists = out["expanded"], out["exists"]
    np.testing.assert_array_equal(expanded[0], [[True, True], [False, False]])
    np.testing.assert_array_equal(expanded[1], np.zeros((2, 2, 2), bool))  # t = T
    np.testing.assert_array_equal(exists[0], np.ones((2, 2), bool))
    np.testing.assert_array_equal(exists[1][0], np.ones((2, 2), bool))
    np.testing.assert_array_equal(exists[1][1], np.zeros((2, 2), bool))

    returns = out["returns"]
    # Prompt 0: R_1 = [1 + 0.9 · mean(1, 0), 0 + 0.9 · mean(0.5, 0.5)] = [1.45, 0.45].
    np.testing.assert_allclose(returns[0], [[1.45, 0.45], [1.0, 1.0]], rtol=1e-6)
    np.testing.assert_allclose(returns[1], [[[1, 0], [0.5, 0.5]], [[0, 0], [0, 0]]])

    advantages = out["advantages"]
    np.testing.assert_allclose(advantages[0], [[0.5, -0.5], [0.0, 0.0]], atol=1e-6)
    np.testing.assert_allclose(advantages[1], [[[0.5, -0.5], [0, 0]], [[0, 0], [0, 0]]],
                               atol=1e-6)

    per_agent = out["per_agent"]
    assert per_agent[0].shape == (2, 2, 2) and per_agent[1].shape == (2, 2, 2, 2)
    for agent in range(2):  # align: every agent gets the joint advantage of its index
        np.testing.assert_allclose(per_agent[0][0, agent], [0.5, -0.5], atol=1e-6)
        np.testing.assert_allclose(per_agent[1][0, 0, agent], [0.5, -0.5], atol=1e-6)
        np.testing.assert_array_equal(per_agent[1][0, 1, agent], 0.0)
        np.testing.assert_array_equal(per_agent[1][1, :, agent], 0.0)
    assert not any(np.isnan(a).any() for a in per_agent)


def test_hand_tree_std_normalized():
    out = pipeline(hand_tree(), threshold=0.5, num_turns=2, normalize_std=True)
    # Population std of [1.45, 0.45] is 0.5 → ±1; the constant sibling groups stay 0.
    np.testing.assert_allclose(out["advantages"][0], [[1, -1], [0, 0]], atol=1e-5)
    np.testing.assert_allclose(out["advantages"][1][0], [[1, -1], [0, 0]], atol=1e-5)


def test_design_worked_check_single_node():
    rewards = [np.array([[3.0, 1.0, 2.0, 2.0]], np.float32)]
    out = pipeline(rewards, threshold=None, num_turns=1, agents=3, gens=4)
    np.testing.assert_allclose(out["per_agent"][0][0], np.tile([1.0, -1.0, 0.0, 0.0], (3, 1)))


def test_cross_mode_single_turn_credit():
    # N = 2, G = 2, J = 4: A = R − mean = [−1.5, −0.5, 0.5, 1.5]; sums over joint actions.
    rewards = [np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)]
    out = pipeline(rewards, threshold=None, num_turns=1, mode="cross")
    np.testing.assert_allclose(out["per_agent"][0][0], [[-2.0, 2.0], [-1.0, 1.0]])


def test_termination_rule_is_strictly_above():
    r = np.array([[0.5, 0.5], [0.6, 0.5], [0.0, 1.0]], np.float32)
    np.testing.assert_array_equal(jitted(termination_mask, r, threshold=0.5)[:, 0],
                                  [True, False, True])
    np.testing.assert_array_equal(jitted(termination_mask, r, threshold=None),
                                  np.ones((3, 2), bool))


def random_tree(seed, batch, joint, turns):
    rng = np.random.default_rng(seed)
    rewards = [rng.normal(size=batch + (joint,) * t).astype(np.float32)
               for t in range(1, turns + 1)]
    expanded = [rng.random(batch + (joint,) * t) < 0.6 for t in range(1, turns + 1)]
    return rewards, expanded


def reference_returns(rewards, expanded, gamma):
    """Recursive walk over the generated nodes only; absent entries are None."""
    turns = len(rewards)
    batch_shape = rewards[0].shape[:-1]
    joint = rewards[0].shape[-1]
    out = [np.full(r.shape, np.nan) for r in rewards]

    def visit(t, path):
        r = float(rewards[t - 1][path])
        if t < turns and expanded[t - 1][path]:
            r += gamma * np.mean([visit(t + 1, path + (j,)) for j in range(joint)])
        out[t - 1][path] = r
        return r

    for b in itertools.product(*(range(n) for n in batch_shape)):
        for j in range(joint):
            visit(1, b + (j,))
    return out


def test_returns_and_advantages_match_recursive_reference():
    rewards, expanded = random_tree(0, (3,), 3, 3)
    reference = reference_returns(rewards, expanded, GAMMA)
    exists = [~np.isnan(r) for r in reference]
    # Poison every entry that was never generated, in rewards and in expanded.
    poisoned = [np.where(e, r, np.nan) for r, e in zip(rewards, exists)]
    garbage_expanded = [np.where(e, x, True) for x, e in zip(expanded, exists)]

    @jax.jit
    def credit(r, x):
        returns = tree_returns(r, x, GAMMA)
        found = tree_exists(x)
        return returns, found, tree_advantages(returns, found, estimator="rloo")

    returns, found, advantages = credit(poisoned, garbage_expanded)
    for want, got in zip(exists, found):
        np.testing.assert_array_equal(got, want)
    for t, (got, want, e) in enumerate(zip(returns, reference, exists)):
        np.testing.assert_allclose(np.asarray(got)[e], want[e], rtol=1e-5)
        np.testing.assert_array_equal(np.asarray(got)[~e], 0.0)
        want_adv = np.where(e, want - (np.nansum(want, -1, keepdims=True) - want) / 2, 0.0)
        np.testing.assert_allclose(advantages[t], want_adv, rtol=1e-4, atol=1e-5)
    assert int(np.asarray(exists[2]).sum()) > 0  # the random tree reaches turn 3


def test_vmap_over_prompts_and_jit_match_batched():
    rewards, expanded = random_tree(1, (3,), 2, 2)

    def credit(r, e):
        return magrpo_advantages(r, e, gamma=GAMMA, mode="cross", num_agents=1,
                                 num_generations=2, estimator="mean", normalize_std=True)

    batched, mapped = jax.jit(lambda r, e: (credit(r, e), jax.vmap(credit)(r, e)))(
        rewards, expanded)
    for a, b in zip(batched, mapped):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_no_retrace_on_same_shapes():
    traces = []

    @jax.jit
    def returns(r, e):
        traces.append(1)
        return tree_returns(r, e, GAMMA)

    for seed in (2, 3):
        returns(*random_tree(seed, (2,), 2, 2))
    assert len(traces) == 1


def test_row_advantages_gathers_rollout_rows():
    # P = 1, J = 2, N = 2 agents, G = 2: turn 1 has one node, turn 2 has nodes 0 and 1.
    turn1 = np.array([[[1.0, 2.0], [3.0, 4.0]]], np.float32)  # [P, N, G]
    turn2 = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2) + 10  # [P, J, N, G]
    rows = jitted(row_advantages, [turn1, turn2], np.array([1, 1, 2, 2, 2, 0]),
                  np.array([0, 0, 1, 1, 0, 0]), np.array([0, 1, 0, 1, 1, 0]))
    # turn2[0, node, agent, g] = 10 + 4·node + 2·agent + g
    np.testing.assert_allclose(rows, [[1, 2, 14, 15, 11, 0], [3, 4, 16, 17, 13, 0]])


def test_row_advantages_vmap_over_batches_matches_loop():
    # Batch 0 is the hand example above; batch 1 adds 100 and gathers other rows.
    turn1 = np.array([[[1.0, 2.0], [3.0, 4.0]]], np.float32)  # [P, N, G]
    turn2 = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2) + 10  # [P, J, N, G]
    per_turn = [np.stack([turn1, turn1 + 100]), np.stack([turn2, turn2 + 100])]
    row_turn = np.array([[1, 1, 2, 2, 2, 0], [2, 1, 0, 2, 1, 2]])
    row_node = np.array([[0, 0, 1, 1, 0, 0], [1, 0, 0, 0, 0, 1]])
    row_sample = np.array([[0, 1, 0, 1, 1, 0], [0, 1, 0, 1, 0, 1]])
    mapped, looped = vmapped_and_looped(row_advantages, per_turn, row_turn, row_node,
                                        row_sample)
    assert_trees_match(mapped, looped)
    np.testing.assert_allclose(mapped[0], [[1, 2, 14, 15, 11, 0], [3, 4, 16, 17, 13, 0]])
    # turn2 + 100 at [0, node, agent, g] = 110 + 4·node + 2·agent + g; padding row → 0.
    np.testing.assert_allclose(mapped[1], [[114, 102, 0, 111, 101, 115],
                                           [116, 104, 0, 113, 103, 117]])


def test_layout_checks():
    with pytest.raises(ValueError, match="turn 2"):
        tree_returns([np.zeros((1, 2)), np.zeros((1, 3, 2))],
                     [np.zeros((1, 2), bool), np.zeros((1, 3, 2), bool)], GAMMA)
    with pytest.raises(ValueError, match="turns"):
        tree_returns([np.zeros((1, 2))], [], GAMMA)
    with pytest.raises(ValueError, match="gamma"):
        tree_returns([np.zeros((1, 2))], [np.zeros((1, 2), bool)], 1.5)
    with pytest.raises(ValueError, match="num_turns"):
        tree_expanded([np.zeros((1, 2)), np.zeros((1, 2, 2))], 0.5, num_turns=1)
    with pytest.raises(ValueError, match="per_turn"):
        row_advantages([np.zeros((1, 2, 2)), np.zeros((1, 3, 2, 2)), np.zeros((1, 2, 2, 2, 2))],
                       np.zeros(1, int), np.zeros(1, int), np.zeros(1, int))
