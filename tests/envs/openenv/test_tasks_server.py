"""An OpenEnv 0.10 server with a task list and 0/1 rewards that declares no success of
its own (tests/envs/openenv/tasks_server.py, on 127.0.0.1): its splits become mtrl's
train / validation / test, a step with reward 1 is a success under the default
env.success_reward (a wrong one is said in one warning line), more sessions than it
holds is refused naming env.concurrency, and episodes round-trip through OpenEnv's
training-trace format token for token."""

import jax
import pytest

pytest.importorskip("openenv.core.harness")

from mtrl.data.suite import DataConfig, build_suite
from mtrl.envs.openenv.client import EpisodeClient, ExternalEnvError
from mtrl.envs.openenv.env import SUCCESS_CHECK_STEPS, OpenEnvConfig, OpenEnvEnvironment
from mtrl.envs.openenv.tasks import server_splits
from mtrl.envs.openenv.traces import episode_traces, read_traces, write_traces
from mtrl.rollout import RolloutConfig, rollout
from tests.envs.openenv.servers import free_port, tasks_server
from tests.rollout.scripted import CharTokenizer, ScriptedBackend


@pytest.fixture(scope="module")
def words():
    with tasks_server(free_port()) as (url, _):
        yield url


def suite(url, num_train=8, num_eval=2, num_test=9):
    data = DataConfig(name="openenv", path="", num_train=num_train, num_eval=num_eval,
                      num_test=num_test, test_split="test", options={"server": url})
    return build_suite(data, 0)


def test_the_servers_splits_are_mtrls(words):
    assert server_splits(words) == {"train": "train", "validation": "dev", "test": "test"}
    tasks = suite(words)
    train, validation, test = (tasks.tasks(s) for s in ("train", "validation", "test"))
    assert [t.task_id for t in train] == [f"train/{i}" for i in range(5)]  # all it has
    assert [t.task_id for t in validation] == ["dev/0", "dev/1"]
    assert [t.task_id for t in test] == ["test/0", "test/1", "test/2"]
    assert test[2].reset_kwargs == {"split": "test", "index": 2}
    env = OpenEnvEnvironment(OpenEnvConfig(url=words), "message")
    try:  # the task is the server's: its reset shows that task's word
        _, (prompt,) = env.reset(test[2])
        assert prompt == "Say the word test2." == test[2].prompt  # kept for transcripts
    finally:
        env.close()


def test_a_server_without_a_task_list_is_named(toy_url):
    with pytest.raises(ValueError, match=r"lists no tasks .* unset data.options.server"):
        suite(toy_url)


def test_a_0_1_reward_is_a_success_by_default(words):
    env = OpenEnvEnvironment(OpenEnvConfig(url=words, concurrency=2), "message")
    try:
        state, _ = env.reset(suite(words).tasks("train")[1])
        miss, hit = env.step([state, state], [("no",), ("train1!",)], 1)
        assert (miss.reward, miss.done, hit.reward, hit.done) == (0.0, False, 1.0, True)
        assert hit.info["correct"] and hit.ended
    finally:
        env.close()


def test_a_success_reward_no_reward_reaches_is_said_once(words, capsys):
    env = OpenEnvEnvironment(OpenEnvConfig(url=words, success_reward=2.09, concurrency=4),
                             "message")
    try:
        state, _ = env.reset(suite(words).tasks("train")[0])
        for _ in range(SUCCESS_CHECK_STEPS // 8 + 1):
            results = env.step([state] * 8, [("train0",)] * 8, 1)
            assert not any(r.done for r in results)  # 1.0 < 2.09: never a success
    finally:
        env.close()
    lines = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert lines == [
        f"warning: openenv server {words} declares no success and none of its first "
        f"{SUCCESS_CHECK_STEPS} step rewards (the highest 1) reaches "
        "env.success_reward=2.09: no step counts as a success until one does; set "
        "env.success_reward to the reward of a solved step"]


def test_a_reached_success_reward_says_nothing(words, capsys):
    env = OpenEnvEnvironment(OpenEnvConfig(url=words), "message")
    try:
        state, _ = env.reset(suite(words).tasks("train")[0])
        env.step([state], [("train0",)], 1)
    finally:
        env.close()
    assert "warning" not in capsys.readouterr().err


def test_more_sessions_than_the_server_holds_names_the_fields():
    with tasks_server(free_port(), max_sessions=1) as (url, _):
        client = EpisodeClient(url, concurrency=3, retries=0)
        try:
            reset = {"split": "train", "index": 0}
            with pytest.raises(ExternalEnvError) as error:
                client.play([(reset, [{"message": "x"}, {"message": "y"}])] * 6)
        finally:
            client.close()
    message = str(error.value)
    assert "refused a session: it holds at most 1 at once" in message
    assert "set env.concurrency=1 (or raise the server's max sessions" in message
    assert "\n" not in message


def test_episodes_round_trip_through_openenv_training_traces(words, tmp_path):
    tasks = suite(words).tasks("validation")
    env = OpenEnvEnvironment(OpenEnvConfig(url=words, concurrency=4), "message")
    config = RolloutConfig(num_turns=2, num_generations=2, num_agents=1, max_new_tokens=12)
    try:
        tree = rollout(tasks, env, ScriptedBackend(), CharTokenizer(), config,
                       jax.random.key(0))
    finally:
        env.close()
    traces = episode_traces(tree, tasks)
    assert len(traces) == 2 * 2 * 2  # 2 tasks, G=2 at each of 2 turns: 4 leaves each
    back = read_traces(write_traces(tmp_path / "traces.jsonl", traces))
    assert back == traces
    first = tree.turns[0]
    turn = back[0].turns[0]  # task dev/0, first completion, turn 1
    assert turn.node_id == "dev/0/0.0/turn1"
    assert turn.prompt_token_ids == list(first.contexts[0][0])
    assert turn.completion_token_ids == list(first.completions[0][0])
    assert turn.per_token_logps == [float(x) for x in first.logprobs[0][0]]
    assert turn.loss_mask == [0] * len(turn.prompt_token_ids) + [1] * len(
        turn.completion_token_ids)
    assert turn.metadata["observation"] == "No. Say dev0."
    second = back[0].turns[1]  # turn 2 reads turn 1's context, completion, observation
    assert second.prompt_token_ids[:len(turn.prompt_token_ids)] == turn.prompt_token_ids
