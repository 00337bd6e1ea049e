"""Every credit estimator x joint mode: the advantages the trainer feeds the loss equal
the library function of its paper applied to the same tree, written out here with
plain loops (paths by recursion, returns by recursion, credit by explicit sums)."""

import functools
import types

import jax
import numpy as np
import pytest

from mtrl.credit import (GROUP_ADVANTAGES, gigpo_advantages, grpo_advantages,
                         igpo_advantages, mt_grpo_advantages, ufo_reward)
from mtrl.rollout import RolloutConfig, StepRollout, make_batch, rollout
from mtrl.training.advantages.estimators import CREDIT_ESTIMATORS, CreditConfig, token_advantages
from tests.rollout.scripted import CharTokenizer, ScriptedBackend
from tests.training.signal_env import SignalEnv

GAMMA = 0.9
TREE_GROUP = {"magrpo": "mean", "grpo": "grpo", "dr_grpo": "dr_grpo", "rloo": "rloo"}
# The estimators written out again below (a new estimator brings its own reference test;
# CONTRIBUTING.md, "How to add an estimator").
REFERENCED = (*TREE_GROUP, "mt_grpo", "igpo", "gigpo", "ufo")


@functools.lru_cache(maxsize=None)  # trees are read-only here: share them across tests
def make_tree(mode, num_turns=3):
    config = RolloutConfig(num_turns=num_turns, num_generations=2, num_agents=2,
                           joint_mode=mode, termination_threshold=0.5, discount=GAMMA,
                           max_new_tokens=32, max_context=4096)
    return rollout([0, 1], SignalEnv(2), ScriptedBackend(), CharTokenizer(), config,
                   jax.random.key(0))


def steps_by_node(tree):
    return {(r.turn, int(n)): (r, m) for r in tree.turns for m, n in enumerate(r.node_index)}


def tree_values(tree, group):
    """{(turn, node, agent, g)}: returns by recursion, summed per completion, baselined."""
    nodes, joint = steps_by_node(tree), tree.joint_actions

    def returns(turn, node):
        rec, m = nodes[(turn, node)]
        return [float(rec.rewards[m, j]) + (GAMMA * np.mean(returns(turn + 1, node * joint + j))
                                            if rec.expanded[m, j] else 0.0) for j in range(joint)]

    out = {}
    for (turn, node) in nodes:
        r = returns(turn, node)
        for a in range(2):
            summed = np.array([sum(r[j] for j in range(joint) if tree.joint_index[j, a] == g)
                               for g in range(2)], np.float32)
            adv = np.asarray(GROUP_ADVANTAGES.get(group)(summed))
            for g in range(2):
                out[(turn, node, a, g)] = adv[g]
    return out


def paths(tree, task):
    """Root-to-leaf lists of (turn, node, j, reward, info)."""
    nodes, joint = steps_by_node(tree), tree.joint_actions

    def walk(turn, node):
        rec, m = nodes[(turn, node)]
        for j in range(joint):
            step = (turn, node, j, float(rec.rewards[m, j]), rec.infos[m * joint + j])
            if rec.expanded[m, j]:
                for rest in walk(turn + 1, node * joint + j):
                    yield [step] + rest
            else:
                yield [step]

    return list(walk(1, task))


def path_values(name, group, credit):
    """[Q, K] values of the library function for one task's paths."""
    k = max(len(p) for p in group)
    mask = np.array([[t < len(p) for t in range(k)] for p in group])
    rewards = np.array([[p[t][3] if t < len(p) else 0.0 for t in range(k)] for p in group],
                       np.float32)
    final = np.array([p[-1][3] for p in group], np.float32)
    if name == "mt_grpo":
        adv = mt_grpo_advantages(rewards.sum(1) - final, final)
        return np.array([[adv.non_final[i] if t < len(p) - 1 else adv.final[i]
                          for t in range(k)] for i, p in enumerate(group)])
    if name == "igpo":
        truth = np.array([[p[0][4]["answer_logprob_prior"]] +
                          [p[min(t, len(p) - 1)][4]["answer_logprob"] for t in range(k)]
                          for p in group], np.float32)
        return np.asarray(igpo_advantages(truth, final, mask, gamma=GAMMA))
    if name == "gigpo":
        ids = np.array([[-1] + [p[t][4]["anchor_id"] if t < len(p) else 99
                                for t in range(k - 1)] for p in group])
        return np.asarray(gigpo_advantages(rewards.sum(1), rewards, ids, mask, gamma=GAMMA))
    if name == "ufo":
        rewards = [ufo_reward([p[t][4]["correct"] if t < len(p) else False for t in range(k)],
                              [p[t][4]["answer_id"] if t < len(p) else 7 for t in range(k)],
                              mask[i], gamma=credit.options.ufo_gamma,
                              penalty_coef=credit.options.ufo_penalty)
                   for i, p in enumerate(group)]
        adv = np.asarray(grpo_advantages(np.array(rewards, np.float32)))
        return np.repeat(adv[:, None], k, axis=1)
    raise AssertionError(name)


def path_credit(tree, name, credit):
    """{(turn, node, agent, g)}: mean over paths per step, summed per completion."""
    sums, counts = {}, {}
    for task in range(tree.num_tasks):
        group = paths(tree, task)
        values = path_values(name, group, credit)
        for i, p in enumerate(group):
            for t, (turn, node, j, _, _) in enumerate(p):
                sums[(turn, node, j)] = sums.get((turn, node, j), 0.0) + values[i, t]
                counts[(turn, node, j)] = counts.get((turn, node, j), 0) + 1
    out = {}
    for (turn, node), _ in steps_by_node(tree).items():
        for a in range(2):
            for g in range(2):
                out[(turn, node, a, g)] = sum(
                    sums[(turn, node, j)] / counts[(turn, node, j)]
                    for j in range(tree.joint_actions) if tree.joint_index[j, a] == g)
    return out


@pytest.mark.parametrize("mode", ["align", "cross"])
@pytest.mark.parametrize("name", REFERENCED)
def test_trainer_advantages_equal_the_library_function(name, mode):
    tree = make_tree(mode)
    batch = make_batch(tree)
    credit = CreditConfig(estimator=name)
    fed = np.asarray(token_advantages(credit, StepRollout(tree, batch), GAMMA))
    expected = (tree_values(tree, TREE_GROUP[name]) if name in TREE_GROUP
                else path_credit(tree, name, credit))
    loss_mask = np.asarray(batch.loss_mask)
    rows = int((np.asarray(batch.row_turn) > 0).sum())
    assert len(expected) == rows * 2
    for c in range(rows):
        t, node, g = (int(np.asarray(x)[c]) for x in
                      (batch.row_turn, batch.row_node, batch.row_sample))
        for a in range(2):
            values = fed[a, c][loss_mask[a, c]]
            assert values.size
            np.testing.assert_allclose(values, expected[(t, node, a, g)], rtol=1e-4, atol=1e-5)
    assert not fed[:, rows:].any()
    assert np.abs(fed).sum() > 0  # a test that cannot pass on all-zero advantages


@pytest.mark.parametrize("baseline", ["rloo", "max", "raw"])
def test_magrpo_baselines_and_normalize_std_reach_the_loss(baseline):
    tree = make_tree("cross", num_turns=2)
    batch = make_batch(tree)
    plain = np.asarray(token_advantages(CreditConfig.of(baseline=baseline),
                                        StepRollout(tree, batch), GAMMA))
    expected = tree_values(tree, baseline)
    c = 0
    t, node, g = (int(np.asarray(x)[c]) for x in (batch.row_turn, batch.row_node,
                                                  batch.row_sample))
    values = plain[0, c][np.asarray(batch.loss_mask)[0, c]]
    np.testing.assert_allclose(values, expected[(t, node, 0, g)], rtol=1e-5, atol=1e-6)
    # Regression: credit.normalize_std was never read by the trainer.
    scaled = np.asarray(token_advantages(CreditConfig.of(baseline=baseline, normalize_std=True),
                                         StepRollout(tree, batch), GAMMA))
    assert not np.allclose(plain, scaled)


def test_legacy_baseline_names_are_magrpo():
    credit = CreditConfig(estimator="max")
    assert (credit.estimator, credit.options.baseline) == ("magrpo", "max")
    assert CreditConfig.of("raw").options.baseline == "raw"


@pytest.mark.parametrize("estimator, field, value", [
    ("ppo", None, None), ("magrpo", "baseline", "median"), ("mt_grpo", "lambda_on", "both"),
    ("igpo", "igpo_gain", "kl")])
def test_unknown_names_are_one_line_errors(estimator, field, value):
    with pytest.raises(ValueError) as error:
        CreditConfig.of(estimator, **({field: value} if field else {}))
    assert "\n" not in str(error.value)
    assert repr(value if field else estimator) in str(error.value)


def test_baselines_are_the_group_functions_registry():
    """credit.baseline names an entry of mtrl.credit's GROUP_ADVANTAGES (one vocabulary)."""
    from mtrl.credit import GROUP_ADVANTAGES
    for name in GROUP_ADVANTAGES.names():
        assert CreditConfig.of(baseline=name).options.baseline == name


@pytest.mark.parametrize("name, message", [("igpo", "answer_logprob"), ("gigpo", "anchor_id")])
def test_estimator_needs_are_checked_against_the_environment(name, message):
    from mtrl.training.run.built_rules import estimator_info
    from tests.rollout.scripted import ScriptedEnv
    run = types.SimpleNamespace(credit=CreditConfig(estimator=name))
    with pytest.raises(ValueError, match=message) as error:
        estimator_info(run, ScriptedEnv(2))
    assert "\n" not in str(error.value)
    estimator_info(run, SignalEnv(2))  # provided


@pytest.mark.parametrize("credit, generations", [(CreditConfig(estimator="grpo"), 4),
                                                 (CreditConfig.of(normalize_std=True), 4),
                                                 (CreditConfig(), 3)])
def test_refuel_needs_even_siblings_and_unscaled_returns(credit, generations):
    from mtrl.training.config.rules import groups_fit_generations, returns_fit_the_loss
    loss = types.SimpleNamespace(objective=types.SimpleNamespace(loss="refuel"))
    with pytest.raises(ValueError, match="refuel"):
        groups_fit_generations(loss, types.SimpleNamespace(num_generations=generations))
        returns_fit_the_loss(loss, credit)


def test_code_env_reports_what_ufo_reads():
    from mtrl.envs.code import CodeEnv
    from mtrl.training.advantages.estimators import CREDIT_ESTIMATORS
    assert CREDIT_ESTIMATORS.get("ufo").needs <= CodeEnv.info_keys


def test_the_built_in_estimators_are_registered():
    assert set(REFERENCED) <= set(CREDIT_ESTIMATORS.names())
