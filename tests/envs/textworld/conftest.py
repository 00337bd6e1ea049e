"""Games for the TextWorld tests: one per challenge of the default mix, generated
into the games cache (MTRL_TEXTWORLD_CACHE or ~/.cache/mtrl/textworld; a fresh
machine generates them once, a few seconds each)."""

import pytest

from mtrl.envs.textworld.games import GameSpec, default_cache_dir, generate


@pytest.fixture(scope="session")
def games():
    """{"coin1": take coin, "coin2": go <dir>, take coin, "hunt": take <object>}"""
    specs = {"coin1": GameSpec("tw-coin_collector", 1, 0),
             "coin2": GameSpec("tw-coin_collector", 2, 1),
             "hunt": GameSpec("tw-treasure_hunter", 1, 2)}
    return {name: generate(spec, default_cache_dir()) for name, spec in specs.items()}
