"""Episodes on a real OpenEnv server (tests/envs/openenv/toy_server.py on 127.0.0.1)
through mtrl's client (mtrl/envs/openenv/client.py): replies as the protocol gives
them; a slow server is retried or named, a malformed reply and a server that dies
mid-episode are one clear error, never a reward of 0."""

import pytest

pytest.importorskip("openenv.core")

from mtrl.envs.openenv.client import (EpisodeClient, ExternalEnvError, MalformedReply,
                                      Reply, parse_reply)
from tests.envs.openenv.servers import free_port, toy_server


@pytest.fixture
def toy(toy_url):
    return toy_url


@pytest.mark.parametrize("payload, message", [
    ({"reward": 1.0, "done": False}, "no observation object"),
    ({"observation": {}, "reward": None, "done": False}, "no reward"),
    ({"observation": {}, "reward": "1.0", "done": False}, "reward must be a finite number"),
    ({"observation": {}, "reward": float("inf"), "done": False}, "finite number"),
    ({"observation": {}, "reward": True, "done": False}, "finite number"),
    ({"observation": {}, "reward": 0.5, "done": "yes"}, "done must be true or false"),
])
def test_malformed_step_replies_are_refused(payload, message):
    with pytest.raises(MalformedReply, match=message):
        parse_reply(payload, "step 1")
    assert parse_reply({"observation": {"a": 1}, "reward": None}, "reset") == Reply(
        {"a": 1}, None, False)
    # openenv 0.10: metadata beside the observation (and inside it); 0.3: inside
    assert parse_reply({"observation": {"a": 1, "metadata": {"success": True}},
                        "reward": 1.0, "metadata": {"success": True}}, "step 1") == Reply(
        {"a": 1}, 1.0, False, {"success": True})
    assert parse_reply({"observation": {"a": 1, "metadata": {"k": 2}}, "reward": 0},
                       "step 1").metadata == {"k": 2}


def test_episodes_replay_the_same_replies(toy):
    client = EpisodeClient(toy, timeout_s=10, concurrency=4)
    try:
        played = client.play([({"seed": 3}, ({"message": "5"},)),
                              ({"seed": 3}, ({"message": "xx"}, {"message": "I say 5"})),
                              ({"seed": 4}, ())])
    finally:
        client.close()
    (first, [said]), (again, [miss, hit]), (other, []) = played
    assert first == again and first.observation == {"prompt": "Say the number 5."}
    assert said == Reply({"prompt": "Right."}, 1.0, True) == hit
    assert miss == Reply({"prompt": "No. Say 5."}, -0.02, False)
    assert other.observation["prompt"] == "Say the number 6." and client.attempts == 0


def test_a_slow_server_is_retried_then_named(toy):
    client = EpisodeClient(toy, timeout_s=0.5, retries=1)
    try:  # slow once: the second try answers, with the episode's true reward
        [(_, [reply])] = client.play([({"seed": 9, "mode": "slow_once", "delay": 1.5},
                                       ({"message": "4"},))])
        assert reply.reward == 1.0 and client.attempts == 1
        with pytest.raises(ExternalEnvError) as error:  # slow every time
            client.play([({"seed": 1, "mode": "slow", "delay": 1.5}, ({"message": "x"},))])
    finally:
        client.close()
    text = str(error.value)
    assert "step 1 of the episode reset with" in text and "failed 2 times" in text
    assert "no answer within 0.5 s" in text and "\n" not in text


@pytest.mark.parametrize("mode", ["no_reward", "nan_reward"])
def test_a_reply_without_a_usable_reward_is_an_error(toy, mode):
    client = EpisodeClient(toy, timeout_s=10, retries=2)
    try:
        with pytest.raises(ExternalEnvError, match="malformed reply to the episode") as error:
            client.play([({"seed": 1, "mode": mode}, ({"message": "x"},))])
    finally:
        client.close()
    assert "step 1: " in str(error.value) and client.attempts == 0  # not retried


def test_a_server_that_dies_mid_episode_is_named():
    with toy_server(free_port()) as (url, process):
        client = EpisodeClient(url, timeout_s=5, retries=1)
        try:
            with pytest.raises(ExternalEnvError) as error:
                client.play([({"seed": 1, "mode": "die"},
                              ({"message": "x"}, {"message": "y"}))])
        finally:
            client.close()
        assert process.wait(timeout=10) == 3
    text = str(error.value)
    assert text.startswith(f"openenv server {url}: ") and "failed 2 times" in text
    assert "is the server up" in text
