"""The OpenEnv adapter as an mtrl environment (mtrl/envs/openenv/env.py) on the toy
server: prompts, rewards, episode ends and step info come from the server; a branch
continues by replaying its episode, and a server that does not replay the same
episode is an error naming the step."""

import pytest

pytest.importorskip("openenv.core")

from mtrl.envs.openenv.client import ExternalEnvError
from mtrl.envs.openenv.env import OpenEnvConfig, OpenEnvEnvironment
from mtrl.envs.openenv.task import EpisodeTask


def task(seed, **reset):
    return EpisodeTask(f"seed/{seed}", tuple(sorted({"seed": seed, **reset}.items())))


def test_branches_of_one_episode_step_from_the_same_state(toy_url):
    env = OpenEnvEnvironment(OpenEnvConfig(url=toy_url, concurrency=2), "message")
    try:
        state, (prompt,) = env.reset(task(3))  # n = 5
        assert prompt == "Say the number 5."  # the observation's only string field
        miss, hit = env.step([state, state], [("no",), ("it is 5",)], 1)
        assert (miss.reward, miss.done, miss.ended) == (-0.02, False, False)
        assert (hit.reward, hit.done, hit.ended) == (1.0, True, True)
        assert hit.info["correct"] and not miss.info["correct"]
        assert miss.observations == ("No. Say 5.",)
        # Two children of the missed branch: each replays "no", then plays its own.
        a, b = env.step([miss.state, miss.state], [("5",), ("x",)], 2)
        assert (a.reward, b.reward) == (1.0, -0.01)
        assert a.info["anchor_id"] != b.info["anchor_id"]
        assert a.info["answer_id"] != b.info["answer_id"]
    finally:
        env.close()


def test_an_episode_that_replays_differently_is_an_error(toy_url):
    # drift rewards grow past any success_reward below 1e9: no step ends the episode
    env = OpenEnvEnvironment(OpenEnvConfig(url=toy_url, observation_key="prompt",
                                           success_reward=1e9), "message")
    try:
        state, (prompt,) = env.reset(task(1, mode="drift"))
        assert prompt == "Say the number 3."
        (first,) = env.step([state], [("x",)], 1)
        with pytest.raises(ExternalEnvError, match="gave another reply at step 1 than its "
                                                   "first play"):
            env.step([first.state], [("y",)], 2)
    finally:
        env.close()
