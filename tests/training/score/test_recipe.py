"""reward.recipe: leaves carry the recipe's episode reward, other steps 0; the dominance
check runs when the config is built."""

import jax
import pytest

from mtrl.credit import RewardRecipe
from mtrl.rollout import RolloutConfig, rollout
from mtrl.training.config import base_config
from mtrl.training.config.readers import read_section
from mtrl.training.score.recipe import apply_recipe
from tests.rollout.scripted import CharTokenizer, ScriptedBackend
from tests.training.signal_env import SignalEnv


def test_leaves_carry_the_episode_reward():
    config = RolloutConfig(num_turns=3, num_generations=2, num_agents=2,
                           termination_threshold=0.5, max_new_tokens=32, max_context=4096)
    tree = rollout([0, 1, 2], SignalEnv(2), ScriptedBackend(), CharTokenizer(), config,
                   jax.random.key(0))
    recipe = RewardRecipe(success_reward=1.0, failure_reward=-1.0, step_penalty=0.1,
                          max_turns=3)
    shaped = apply_recipe(recipe, tree)
    leaves = 0
    for before, after in zip(tree.turns, shaped.turns):
        for m in range(len(before.node_index)):
            for j in range(tree.joint_actions):
                info = before.infos[m * tree.joint_actions + j]
                if before.expanded[m, j]:
                    assert after.rewards[m, j] == 0.0
                else:
                    leaves += 1
                    outcome = 1.0 if info["correct"] else -1.0
                    assert after.rewards[m, j] == pytest.approx(outcome - 0.1 * before.turn)
    assert leaves == tree.leaves() and tree.turns[0].rewards is not shaped.turns[0].rewards


def test_recipe_from_config_and_the_dominance_check():
    c = base_config()
    c.rollout.num_turns = 2
    assert read_section(c, "reward") is None  # "env": the environment's rewards
    c.reward.recipe = "recipe"
    assert read_section(c, "reward").max_turns == 2  # rollout.num_turns
    c.reward.step_penalty = 0.9  # 0.9 * 3 turns outweighs the outcome gap of 2
    c.rollout.num_turns = 3
    with pytest.raises(ValueError, match="config.reward: RewardRecipe shaping") as error:
        read_section(c, "reward")
    assert "\n" not in str(error.value)
    c.reward.recipe = "shaped"
    with pytest.raises(ValueError, match="config.reward.recipe: must be one of env, recipe, "
                                         "got 'shaped'"):
        read_section(c, "reward")
