"""Tree rollouts against a brute-force recursive tree builder (scripted policy/env)."""

import itertools

import jax
import numpy as np
import pytest

from mtrl.rollout import PlainFormat, RolloutConfig, make_batch, rollout

from tests.rollout.scripted import (CharTokenizer, ScriptedBackend, ScriptedEnv, scripted_completion,
                      scripted_reward)

TOK = CharTokenizer()
FMT = PlainFormat()


def brute_force(tasks, config, reward_fn=scripted_reward):
    """Recursively expands every node; returns dense rewards/expanded per turn and
    the sorted list of every generated node's per-agent history."""
    n, g, t_max = config.num_agents, config.num_generations, config.num_turns
    if config.joint_mode == "align":
        joints = [(k,) * n for k in range(g)]
    else:
        joints = list(itertools.product(range(g), repeat=n))
    j_count = len(joints)
    rewards = [np.zeros((len(tasks),) + (j_count,) * t, np.float32) for t in range(1, t_max + 1)]
    expanded = [np.zeros(r.shape, bool) for r in rewards]
    histories = []

    def visit(task, path, contexts, state, turn):
        histories.append((turn, path, tuple(tuple(c) for c in contexts)))
        comps = [[scripted_completion(a, contexts[a], k) for k in range(g)] for a in range(n)]
        texts = [[TOK.decode(c) for c in comps[a]] for a in range(n)]
        results = ScriptedEnv(n, reward_fn).step(
            [state] * j_count, [tuple(texts[a][joint[a]] for a in range(n)) for joint in joints],
            turn)
        r = np.array([res.reward for res in results])
        rewards[turn - 1][(task,) + path] = r
        thr = config.termination_threshold
        if turn == t_max or (thr is not None and r.mean() > thr):
            return
        expanded[turn - 1][(task,) + path] = True
        for j, joint in enumerate(joints):
            child = [contexts[a] + comps[a][joint[a]]
                     + TOK.encode(FMT.next(results[j].observations[a])) for a in range(n)]
            visit(task, path + (j,), child, results[j].state, turn + 1)

    env = ScriptedEnv(n, reward_fn)
    for task in tasks:
        state, prompts = env.reset(task)
        visit(task, (), [TOK.encode(FMT.first(p)) for p in prompts], state, 1)
    return rewards, expanded, histories


def run(config, tasks=(0, 1), reward_fn=scripted_reward):
    backend = ScriptedBackend()
    tree = rollout(list(tasks), ScriptedEnv(config.num_agents, reward_fn), backend, TOK,
                   config, jax.random.key(0))
    return tree, backend


CASES = [(mode, n, t, g) for mode in ("align", "cross") for n in (1, 2)
         for t in (1, 2, 3) for g in (2, 3)]


@pytest.mark.parametrize("mode,n,t,g", CASES)
@pytest.mark.parametrize("threshold", [None, 0.5])
def test_tree_matches_brute_force(mode, n, t, g, threshold):
    config = RolloutConfig(num_turns=t, num_generations=g, num_agents=n, joint_mode=mode,
                           termination_threshold=threshold, max_new_tokens=32,
                           max_context=4096)
    tree, _ = run(config)
    rewards, expanded, histories = brute_force([0, 1], config)
    j = g if mode == "align" else g ** n
    assert tree.joint_actions == j
    got_r, got_x, got_e = tree.dense_rewards(), tree.dense_expanded(), tree.dense_exists()
    recorded = 1
    while recorded < t and expanded[recorded - 1].any():
        recorded += 1
    assert len(got_r) == recorded
    for turn, (r, x) in enumerate(zip(got_r, got_x), start=1):
        assert r.shape == (2,) + (j,) * turn
        np.testing.assert_array_equal(x, expanded[turn - 1])
        np.testing.assert_allclose(np.where(got_e[turn - 1], r, 0), rewards[turn - 1])
    # Node counts per turn and leaves agree with the recursion.
    for record in tree.turns:
        assert len(record.node_index) == sum(1 for h in histories if h[0] == record.turn)
    if threshold is None:
        assert tree.leaves() == 2 * j ** t  # G^T (align) or G^(N·T) (cross) per task


@pytest.mark.parametrize("mode", ["align", "cross"])
def test_branch_isolation(mode):
    """Each node's history is exactly its own branch: prompt, own completions, own
    observations, in order."""
    config = RolloutConfig(num_turns=3, num_generations=2, num_agents=2, joint_mode=mode,
                           max_new_tokens=32, max_context=4096)
    tree, _ = run(config)
    _, _, histories = brute_force([0, 1], config)
    j = tree.joint_actions
    by_turn = {}
    for turn, path, contexts in histories:
        by_turn.setdefault(turn, set()).add(contexts)
    for record in tree.turns:
        got = {tuple(tuple(record.contexts[a][m]) for a in range(2))
               for m in range(len(record.node_index))}
        assert got == by_turn[record.turn]
    # Each observation appears only in the histories of its own subtree.
    last = tree.turns[-1]
    for m, node in enumerate(last.node_index):
        history = TOK.decode(last.contexts[0][m])
        path = np.unravel_index(node, (2,) + (j,) * (last.turn - 1))
        assert history.startswith(f"task {path[0]} agent 0")
        assert history.count("obs t") == last.turn - 1


@pytest.mark.parametrize("threshold,expect_expand", [
    (0.5, [True, True]),    # 0.5 is not strictly above 0.5: equality expands
    (0.25, [False, True]),  # 0.5 > 0.25 stops node 0; node 1 sits at the threshold
    (0.3, [False, True]),
    (0.1, [False, False]),
    (None, [True, True]),   # no threshold: every node expands
])
def test_termination_strictly_above(threshold, expect_expand):
    """Node 0 has mean reward 0.5 and node 1 mean 0.25 at turn 1; equality expands."""
    def reward_fn(actions, turn):
        return 0.5 if "task0" in actions[0] else 0.25

    class Env(ScriptedEnv):
        def step(self, states, actions, turn):
            tagged = [tuple(f"task{s[0]}" + a for a in act) for s, act in zip(states, actions)]
            return super().step(states, tagged, turn)

    config = RolloutConfig(num_turns=2, num_generations=2, num_agents=1,
                           termination_threshold=threshold, max_new_tokens=32,
                           max_context=4096)
    tree = rollout([0, 1], Env(1, reward_fn), ScriptedBackend(), TOK, config, jax.random.key(0))
    np.testing.assert_array_equal(tree.turns[0].expanded.all(axis=1), expect_expand)
    if any(expect_expand):
        # Turn 2 holds exactly the children of the expanding nodes (J = G = 2 each).
        assert len(tree.turns[1].node_index) == 2 * sum(expect_expand)
    else:
        assert len(tree.turns) == 1


def test_one_backend_call_per_agent_per_turn():
    config = RolloutConfig(num_turns=3, num_generations=2, num_agents=2, max_new_tokens=32,
                           max_context=4096)
    tree, backend = run(config, tasks=range(5))
    generates = [c for c in backend.calls if c[0] == "generate"]
    assert len(generates) == 3 * 2
    assert [c[2] for c in generates if c[1] == 0] == [5, 10, 20]  # nodes per turn


def test_capacity_error_names_the_knobs():
    config = RolloutConfig(num_turns=3, num_generations=4, num_agents=2, joint_mode="cross",
                           max_nodes_per_turn=1000, max_new_tokens=32, max_context=4096)
    with pytest.raises(ValueError, match="max_nodes_per_turn=1000"):
        run(config, tasks=range(8))


def test_context_overflow_is_truncated_marked_and_masked():
    config = RolloutConfig(num_turns=3, num_generations=2, num_agents=1, max_new_tokens=16,
                           max_context=60)
    tree, _ = run(config)
    assert tree.metrics["rollout/truncated_completions"] > 0
    for record in tree.turns:
        for m, ctx in enumerate(record.contexts[0]):
            assert len(ctx) <= config.max_context - 1
        for r, comp in enumerate(record.completions[0]):
            assert len(record.contexts[0][r // 2]) + len(comp) <= config.max_context
    batch = make_batch(tree)
    assert bool(batch.truncated.any())
    # Truncated rows carry no loss.
    rows = np.asarray(batch.truncated[0])
    assert not np.asarray(batch.loss_mask)[0][rows].any()


def test_prompt_longer_than_context_is_an_error():
    config = RolloutConfig(num_turns=1, num_generations=2, num_agents=1, max_new_tokens=2,
                           max_context=5)
    with pytest.raises(ValueError, match="max_context=5"):
        run(config)


class StrictBackend(ScriptedBackend):
    """The real sampler's contract: every extension adds at least one token."""

    def extend(self, agent, contexts, rows, new_tokens):
        if any(len(t) == 0 for t in new_tokens):
            raise ValueError("every entry of new_tokens needs at least one token")
        return super().extend(agent, contexts, rows, new_tokens)


@pytest.mark.parametrize("max_context", range(24, 44, 2))
def test_a_full_history_ends_its_branch_instead_of_an_empty_extension(max_context):
    config = RolloutConfig(num_turns=3, num_generations=2, num_agents=2, max_new_tokens=8,
                           max_context=max_context)
    tree = rollout([0, 1], ScriptedEnv(2), StrictBackend(), TOK, config, jax.random.key(0))
    for record in tree.turns:
        for a in range(2):
            for ctx in record.contexts[a]:
                assert len(ctx) <= config.max_context - 1
    make_batch(tree)
