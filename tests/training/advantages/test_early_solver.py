"""Every estimator on a real MathEnv tree ranks an early solver at least as high as a
late one and above a failure (the episode ends where its step solved, and a step
penalty charges only the turns played).

The tree (T = 3, G = 4, one agent, no termination threshold): at turn 1 sample g
writes a marker "#g" and so picks its branch's plan; every later sample on that
branch follows the plan. Plan 0 solves at turn 1, plan 1 at turn 2, plan 2 at turn
3, plan 3 never. A branch whose step solved ends there (StepResult.ended), so its
path's last step holds the outcome: before the rule, the turn-1 solver's branch
went on with reward 0 and IGPO / MT-GRPO read outcome 0 for it.
"""

import dataclasses
import re
import zlib

import jax
import numpy as np
import pytest

from mtrl.credit import RewardRecipe
from mtrl.data.gsm8k import MathTask
from mtrl.envs.math import MathEnv, MathEnvConfig
from mtrl.rollout import RolloutConfig, StepRollout, rollout
from mtrl.tokenizers import load_tokenizer
from mtrl.training.advantages.estimators import CREDIT_ESTIMATORS, CreditConfig, method_advantages
from mtrl.training.score.recipe import apply_recipe
from mtrl.rollout.tree_paths import tree_paths
from tests.rollout.scripted import TextPolicy

TASK = MathTask("t/0", "What is 2 + 5?", "7")
PLANS = 4  # sample g at turn 1 picks plan g: solve at turn g + 1 (plan 3: never)


def plan_policy(turn: int, g: int, history: str) -> str:
    found = re.search(r"#(\d)", history)
    plan = int(found.group(1)) if found else g
    answer = "7" if turn == plan + 1 else "1"
    return f"#{plan} \\boxed{{{answer}}}"


def math_tree():
    config = RolloutConfig(num_turns=3, num_generations=PLANS, num_agents=1,
                           max_new_tokens=32, max_context=2048)
    tokenizer = load_tokenizer("byte")
    tree = rollout([TASK], MathEnv(MathEnvConfig(feedback_mode="unary")),
                   TextPolicy(tokenizer, plan_policy), tokenizer, config, jax.random.key(0))
    return with_estimator_infos(tree)


def with_estimator_infos(tree):
    """The step info IGPO and GiGPO read, as an environment or the trainer would give
    it: a constant truth log-prob (no information gained on any turn, so the test
    isolates the outcome's placement) and, as GiGPO's anchor, the state the step led
    to (the answers given so far on the branch)."""
    turns = []
    for record in tree.turns:
        infos = []
        for i, info in enumerate(record.infos):
            m, j = divmod(i, tree.joint_actions)
            parent = int(record.node_index[m])
            infos.append({**info, "answer_logprob": np.log(0.5),
                          "answer_logprob_prior": np.log(0.5),
                          "anchor_id": zlib.crc32(f"{record.turn}/{parent}/{info['team_answer']}"
                                                  .encode()) & 0x7FFFFFFF})
        turns.append(dataclasses.replace(record, infos=infos))
    return dataclasses.replace(tree, turns=turns)


def test_the_tree_ends_each_branch_where_its_episode_ends():
    tree = math_tree()
    first, second, third = tree.turns
    assert first.rewards.tolist() == [[1.0, 0.0, 0.0, 0.0]]
    assert first.ended.tolist() == [[True, False, False, False]]
    assert first.expanded.tolist() == [[False, True, True, True]]
    # Turn 2: the children of plans 1, 2, 3 (node index = 0 * J + j).
    assert second.node_index.tolist() == [1, 2, 3]
    assert second.ended.tolist() == [[True] * 4, [False] * 4, [False] * 4]
    assert third.rewards.sum(axis=1).tolist() == [4.0] * 4 + [0.0] * 4  # plan 2 | plan 3
    (paths,) = tree_paths(tree)
    lengths = paths.mask.sum(axis=1)
    last = paths.rewards[np.arange(len(lengths)), lengths - 1]
    assert sorted(zip(lengths.tolist(), last.tolist())) == (
        [(1, 1.0)] + [(2, 1.0)] * 4 + [(3, 0.0)] * 16 + [(3, 1.0)] * 16)


def first_turn_advantages(tree, credit, gamma):
    per_turn = method_advantages(credit, StepRollout.of(tree), gamma)
    return np.asarray(per_turn[0])[0, 0]  # [P, N, G] at turn 1: task 0, agent 0


CREDITS = [CreditConfig(estimator=name) for name in CREDIT_ESTIMATORS.names()] + [
    CreditConfig.of("magrpo", baseline=b) for b in ("rloo", "max", "raw")] + [
    CreditConfig.of("mt_grpo", turn_coef=0.1),
    CreditConfig.of("mt_grpo", lambda_on="outcome"),
    CreditConfig.of("igpo", igpo_normalization="separate")]


@pytest.mark.parametrize("gamma", [1.0, 0.9])
@pytest.mark.parametrize("credit", CREDITS, ids=lambda c: f"{c.estimator}-{c.options}")
def test_an_early_solver_is_never_ranked_below_a_late_one(credit, gamma):
    early, late2, late3, failure = first_turn_advantages(math_tree(), credit, gamma)
    assert early >= late2 - 1e-6 and late2 >= late3 - 1e-6, (early, late2, late3)
    assert late3 > failure and early > failure, (early, late3, failure)


def test_the_recipe_charges_the_turns_an_episode_played():
    """Step penalty per turn actually played: solving sooner pays less."""
    recipe = RewardRecipe(success_reward=1.0, failure_reward=-1.0, step_penalty=0.01,
                          max_turns=3)
    shaped = apply_recipe(recipe, math_tree())
    (paths,) = tree_paths(shaped)
    totals = sorted(set(np.round(paths.rewards.sum(axis=1), 4).tolist()))
    np.testing.assert_allclose(totals, [-1.03, 0.97, 0.98, 0.99], atol=1e-6)
    early, late2, late3, failure = first_turn_advantages(shaped, CreditConfig(), 1.0)
    assert early > late2 > late3 > failure
