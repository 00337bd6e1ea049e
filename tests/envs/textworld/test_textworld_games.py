"""Games are generated deterministically from their seed, cached whole, and the
suite's train, validation and test games are disjoint."""

import pytest

from mtrl.data.suite import DataConfig, build_suite
from mtrl.envs.textworld.games import GameSpec, default_cache_dir, generate
from mtrl.data.textworld_suite import TextWorldSuite


def test_same_seed_same_game_in_fresh_caches(tmp_path):
    spec = GameSpec("tw-treasure_hunter", 1, 7)
    a = generate(spec, tmp_path / "a")
    b = generate(spec, tmp_path / "b")
    assert (a.content_key, a.objective, a.walkthrough) == \
        (b.content_key, b.objective, b.walkthrough)
    other = generate(GameSpec("tw-treasure_hunter", 1, 8), tmp_path / "a")
    assert other.content_key != a.content_key
    # Cached: entries are whole folders named by the spec, no staging left behind.
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(
        [spec.key, GameSpec("tw-treasure_hunter", 1, 8).key])


def test_splits_are_disjoint_and_deterministic():
    data = DataConfig(name="textworld", train_split="train", eval_split="heldout",
                      test_split="test", num_train=3, num_eval=2, num_test=2,
                      options={"cache_dir": str(default_cache_dir())})
    suite = build_suite(data, seed=0)
    splits = {s: suite.tasks(s) for s in ("train", "validation", "test")}
    assert [len(splits[s]) for s in splits] == [3, 2, 2]
    keys = [{t.content_key for t in tasks} for tasks in splits.values()]
    seeds = [{t.spec.seed for t in tasks} for tasks in splits.values()]
    for i in range(3):
        for j in range(i + 1, 3):
            assert not keys[i] & keys[j] and not seeds[i] & seeds[j]
    again = build_suite(data, seed=5)  # the run's seed does not change the games
    assert [t.content_key for t in again.tasks("test")] == [t.content_key
                                                             for t in splits["test"]]


def test_demonstrations_are_walkthrough_steps_on_the_env_observations():
    from mtrl.envs.textworld.env import TextWorldEnv
    from mtrl.training.run.sections import SFTSection
    data = DataConfig(name="textworld", num_train=3, num_eval=1, num_test=1)
    suite = build_suite(data, seed=0)
    env = TextWorldEnv()
    (pairs,) = suite.demonstrations(env, 1, SFTSection())
    games = suite.tasks("train")
    assert len(pairs) == sum(len(g.walkthrough) for g in games)
    first_prompt = env.reset(games[0])[1][0]
    assert pairs[0] == (first_prompt, games[0].walkthrough[0])
    assert all(command in prompt for prompt, command in pairs)  # listed as a command
    env.close()


@pytest.mark.parametrize("options, field", [
    ({"challenges": ["tw-nothing:1"]}, "challenges"),
    ({"challenges": ["tw-coin_collector"]}, "challenges"),
    ({"seed": -1}, "seed"),
    ({"colour": 1}, "options"),
])
def test_bad_suite_options_name_the_field(options, field):
    with pytest.raises(ValueError, match=f"config.data.options.*{field}|{field}"):
        TextWorldSuite(DataConfig(name="textworld", options=options), 0)


def test_generating_games_says_so_and_a_cached_split_is_silent(tmp_path, capsys):
    from mtrl.envs.textworld.games import make_split
    make_split("train", 1, ["tw-coin_collector:1"], tmp_path)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"TextWorld: generating the train games (once; cached in "
                               f"{tmp_path}")
    assert lines[1].startswith("TextWorld: 1 train games generated in ")
    make_split("train", 1, ["tw-coin_collector:1"], tmp_path)
    assert capsys.readouterr().out == ""
