"""The run's named random streams never hand two consumers the same key."""

import jax
import numpy as np
import pytest

from mtrl.training.run.keys import RunKeys


def key_bytes(key):
    return np.asarray(jax.random.key_data(key)).tobytes()


def test_streams_are_distinct_across_consumers_and_steps():
    keys = RunKeys.from_seed(0)
    drawn = {}
    for step in range(0, 1200):
        for stream in ("rollout", "ppo", "eval"):
            drawn.setdefault(key_bytes(getattr(keys, stream)(step)), []).append((stream, step))
    for agent in range(4):
        drawn.setdefault(key_bytes(keys.init(agent)), []).append(("init", agent))
        for phase in range(3):
            drawn.setdefault(key_bytes(keys.sft(agent, phase)), []).append(("sft", agent, phase))
    clashes = {k: v for k, v in drawn.items() if len(v) > 1}
    assert not clashes, list(clashes.values())[:3]
    assert len(drawn) == 3 * 1200 + 4 + 4 * 3


def test_the_old_offset_collision_is_gone():
    # Before: SFT agent 0 used fold_in(root, 555) and RL step 555 fold_in(root, 555).
    keys = RunKeys.from_seed(0)
    assert key_bytes(keys.sft(0, 0)) != key_bytes(keys.rollout(555))
    assert key_bytes(keys.ppo(7)) != key_bytes(keys.rollout(7))


def test_same_seed_same_keys_other_seed_other_keys():
    assert key_bytes(RunKeys.from_seed(3).rollout(5)) == key_bytes(RunKeys.from_seed(3).rollout(5))
    assert key_bytes(RunKeys.from_seed(3).rollout(5)) != key_bytes(RunKeys.from_seed(4).rollout(5))
    with pytest.raises(ValueError, match="seed must be an int"):
        RunKeys.from_seed(1.5)
