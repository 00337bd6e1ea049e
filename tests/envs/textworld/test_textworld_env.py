"""The TextWorld environment on hand-made command sequences: walkthroughs win with
score-change rewards, the decoy loses, anchors equal for equal world states across
trajectories, malformed actions get a clear observation and a penalty, never a
crash, and a finished game stays finished."""

import pytest

from mtrl.envs.textworld.commands import parse_command
from mtrl.envs.textworld.env import TextWorldEnv, TextWorldEnvConfig, play


@pytest.fixture()
def env():
    env = TextWorldEnv()
    yield env
    env.close()


def test_walkthroughs_win_with_score_rewards(env, games):
    for game in games.values():
        results = play(env, game, game.walkthrough)
        assert [r.done for r in results] == [False] * (len(results) - 1) + [True]
        assert [r.ended for r in results] == [False] * (len(results) - 1) + [True]
        assert sum(r.reward for r in results) == pytest.approx(1.0)
        assert all(r.info["valid"] and not r.info["lost"] for r in results)
        assert "The game is over." in results[-1].observations[0]


def test_intermediate_move_scores_nothing_then_the_coin_scores_one(env, games):
    game = games["coin2"]
    assert len(game.walkthrough) == 2 and game.walkthrough[0].startswith("go ")
    first, second = play(env, game, game.walkthrough)
    assert (first.reward, first.done, second.reward, second.done) == (0.0, False, 1.0, True)
    assert "take coin" in first.observations[0]  # the next room's commands are shown


def test_the_decoy_loses_and_the_game_stays_over(env, games):
    game = games["hunt"]
    _, (prompt,) = env.reset(game)
    commands = prompt.split("Commands: ")[1].split(" | ")
    decoys = [c for c in commands if c.startswith("take ") and c not in game.walkthrough]
    assert decoys, prompt
    (lose,) = play(env, game, [decoys[0]])
    assert lose.reward == -1.0 and lose.info["lost"] and not lose.done and lose.ended
    assert "The game is over." in lose.observations[0]
    with pytest.raises(ValueError, match="episode has ended"):  # no post-game turn
        env.step([lose.state], [(game.walkthrough[0],)], 2)


def test_anchor_ids_are_equal_for_equal_states_across_trajectories(env, games):
    game = games["coin2"]
    go = game.walkthrough[0]
    back = {"north": "south", "south": "north", "east": "west", "west": "east"}[go.split()[1]]
    look = play(env, game, ["look"])[-1].info["anchor_id"]
    there_and_back = play(env, game, [go, f"go {back}"])[-1].info["anchor_id"]
    refused = play(env, game, ["dance"])[-1].info["anchor_id"]
    assert look == there_and_back == refused
    moved = play(env, game, [go])[-1].info["anchor_id"]
    won = play(env, game, game.walkthrough)[-1].info["anchor_id"]
    assert len({look, moved, won}) == 3
    # Stable across environment instances (a hash of the facts, not of the process).
    other = TextWorldEnv()
    assert play(other, game, [go])[-1].info["anchor_id"] == moved
    other.close()


@pytest.mark.parametrize("text, reason", [
    ("", "You typed nothing"),
    ("\x00\x01\x02\x7f binary", "unreadable characters"),
    ("x" * 100_000, "100000 characters"),
    (b"take \xff\xfe coin".decode("utf-8", errors="replace"), "unreadable characters"),
    ("take the moon", "is not a command you can use here"),
    ("quit", "is not a command you can use here"),
])
def test_malformed_actions_get_a_clear_observation_and_a_penalty(env, games, text, reason):
    game = games["coin1"]
    (result,) = play(env, game, [text])
    assert reason in result.observations[0]
    assert result.reward == -TextWorldEnvConfig().invalid_penalty
    assert not result.done and not result.info["valid"]
    assert result.state.history == ()  # the world did not move
    assert play(env, game, [text, "take coin"])[-1].done  # and the game goes on


def test_commands_are_normalised_before_matching(env, games):
    assert parse_command("  Take   Coin.\nand more") == ("take coin", "")
    assert play(env, games["coin1"], ["  Take   Coin.\nthen dance"])[-1].done


def test_the_move_limit_ends_the_game(games):
    env = TextWorldEnv(TextWorldEnvConfig(max_moves=2))
    results = play(env, games["coin1"], ["dance", "dance"])
    assert results[1].info["lost"] and "out of moves" in results[1].observations[0]
    assert [r.ended for r in results] == [False, True] and not results[1].done
    with pytest.raises(ValueError, match="episode has ended"):
        env.step([results[1].state], [("take coin",)], 3)
    env.close()


@pytest.mark.parametrize("field, value", [("history", "all"), ("max_moves", 0),
                                          ("lose_reward", 1.0), ("hidden_verbs", "look")])
def test_bad_options_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        TextWorldEnvConfig(**{field: value})
