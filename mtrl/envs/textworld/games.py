"""TextWorld games generated offline from seeds, cached on disk, split disjointly.

A game is named by a `GameSpec` (challenge, level, seed). `generate` runs TextWorld's
own generator (the `tw-make` challenges: coin collector, treasure hunter, ...) and
compiles it with the bundled Inform 7 compiler; nothing is downloaded. The compiled
`.z8` and its `.json` (the world model the engine's fact tracker reads) are cached
under `cache_dir/<spec key>/`, written to a temporary folder first and renamed, so
a cache entry is either whole or absent. The key holds the textworld version:
another version regenerates instead of reusing a game it may lay out differently.

Splits: train, validation and test draw seeds from disjoint ranges
(`SPLIT_SEED_BASE`), and a validation or test game whose content (objective plus
initial world facts) equals a train game's is skipped, so no held-out game is a
train game under another seed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pathlib
import shutil
import tempfile
import time
from typing import Iterable

from mtrl.config.fields import check_choice

SPLIT_SEED_BASE = {"train": 0, "validation": 100_000, "test": 200_000}
DEFAULT_CHALLENGES = ("tw-coin_collector:1", "tw-coin_collector:2", "tw-treasure_hunter:1")


@dataclasses.dataclass(frozen=True)
class GameSpec:
    challenge: str  # a textworld.challenges name, e.g. "tw-coin_collector"
    level: int
    seed: int

    @classmethod
    def parse(cls, text: str, seed: int) -> "GameSpec":
        """"tw-coin_collector:2" -> GameSpec("tw-coin_collector", 2, seed)."""
        name, _, level = text.partition(":")
        if not level.isdigit():
            raise ValueError(f"expected 'challenge:level', got {text!r}")
        return cls(name, int(level), seed)

    @property
    def key(self) -> str:
        import textworld
        return f"{self.challenge}-L{self.level}-s{self.seed}-tw{textworld.__version__}"


@dataclasses.dataclass(frozen=True)
class GameTask:
    """One game as a task: its files and what the suite and tests read."""

    spec: GameSpec
    path: str  # the compiled .z8 (its .json beside it)
    objective: str
    walkthrough: tuple[str, ...]
    content_key: str  # sha1 of objective + initial facts: equal games share it

    @property
    def name(self) -> str:
        return self.spec.key


def default_cache_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("MTRL_TEXTWORLD_CACHE",
                                       "~/.cache/mtrl/textworld")).expanduser()


def check_challenge(text: str) -> None:
    from textworld.challenges import CHALLENGES
    spec = GameSpec.parse(text, 0)
    check_choice("challenge", spec.challenge, sorted(CHALLENGES))


def generate(spec: GameSpec, cache_dir: pathlib.Path | str) -> GameTask:
    """The game of `spec`, from the cache or generated and compiled into it."""
    folder = pathlib.Path(cache_dir) / spec.key
    if not _cached(spec, cache_dir):
        _generate_into(spec, folder)
    return _load(spec, folder)


def _generate_into(spec: GameSpec, folder: pathlib.Path) -> None:
    import textworld
    from textworld.challenges import CHALLENGES
    from textworld.generator import compile_game
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = pathlib.Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
    try:
        options = textworld.GameOptions()
        options.seeds = spec.seed
        options.path = str(staging / "game.z8")
        options.force_recompile = True
        options.file_ext = ".z8"
        game = CHALLENGES[spec.challenge][1]({"level": spec.level}, options)
        compile_game(game, options)
        try:
            staging.rename(folder)
        except OSError:  # another process cached it first: theirs is the same game
            pass
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _load(spec: GameSpec, folder: pathlib.Path) -> GameTask:
    from textworld.generator.game import Game
    game = Game.load(str(folder / "game.json"))
    facts = sorted(str(f) for f in game.world.facts)
    content = hashlib.sha1("\n".join([game.objective, *facts]).encode()).hexdigest()
    walkthrough = tuple(game.metadata.get("walkthrough") or game.main_quest.commands)
    return GameTask(spec, str(folder / "game.z8"), game.objective, walkthrough, content)


def make_split(split: str, count: int, challenges: Iterable[str], cache_dir, *,
               seed: int = 0, exclude: frozenset = frozenset()) -> list[GameTask]:
    """`count` games of `split`, cycling through `challenges`; seeds start at
    SPLIT_SEED_BASE[split] + seed * 10_000; games whose content key is in `exclude`
    (the train games' keys) or repeats one already taken are skipped."""
    challenges = tuple(challenges)
    if not challenges:
        raise ValueError("challenges must name at least one 'challenge:level'")
    base = SPLIT_SEED_BASE[split] + seed * 10_000
    out, seen, i = [], set(exclude), 0
    made, started = 0, time.perf_counter()
    while len(out) < count:
        if i >= 20 * count + 100:
            raise ValueError(f"could not find {count} distinct {split} games for {challenges} "
                             f"(found {len(out)}); use more or harder challenges")
        spec = GameSpec.parse(challenges[i % len(challenges)], base + i)
        i += 1
        if not made and not _cached(spec, cache_dir):  # a first run's silent minute
            print(f"TextWorld: generating the {split} games (once; cached in {cache_dir}, "
                  "about a second each)", flush=True)
        made += not _cached(spec, cache_dir)
        task = generate(spec, cache_dir)
        if task.content_key in seen:
            continue
        seen.add(task.content_key)
        out.append(task)
    if made:
        print(f"TextWorld: {made} {split} games generated in "
              f"{time.perf_counter() - started:.0f} s", flush=True)
    return out


def _cached(spec: GameSpec, cache_dir) -> bool:
    folder = pathlib.Path(cache_dir) / spec.key
    return (folder / "game.z8").exists() and (folder / "game.json").exists()
