"""TextWorld under the episode-end rule: the move that wins (or loses) ends the
episode, so no post-game turn is generated, rewarded or trained (GiGPO's loss used
to keep such turns with the episode's advantage)."""

import pytest

from mtrl.envs.textworld.env import TextWorldEnv
from tests.rollout.scripted import chain, chain_outcome


@pytest.fixture()
def env():
    env = TextWorldEnv()
    yield env
    env.close()


@pytest.mark.parametrize("won_at", [1, 2, 3])
def test_a_chain_stops_at_the_winning_move(env, games, won_at):
    game = games["coin1"]  # one move: take coin
    choose = lambda turn, g, history: "take coin" if turn >= won_at else "dance"
    tree = chain(env, game, choose, 4)
    assert chain_outcome(tree) == (won_at, True, True)
    assert tree.turns[-1].infos[0]["won"]


def test_a_lost_game_ends_the_chain(env, games):
    game = games["hunt"]
    _, (prompt,) = env.reset(game)
    commands = prompt.split("Commands: ")[1].split(" | ")
    decoy = next(c for c in commands if c.startswith("take ") and c not in game.walkthrough)
    tree = chain(env, game, lambda turn, g, history: decoy, 4)
    assert chain_outcome(tree) == (1, True, False) and tree.turns[0].infos[0]["lost"]
