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
        drawn.setdefault(key_bytes(keys.lora(agent)), []).append(("lora", agent))
        for phase in range(3):
            drawn.setdefault(key_bytes(keys.sft(agent, phase)), []).append(("sft", agent, phase))
    clashes = {k: v for k, v in drawn.items() if len(v) > 1}
    assert not clashes, list(clashes.values())[:3]
    assert len(drawn) == 3 * 1200 + 4 + 4 + 4 * 3


def test_the_lora_stream_left_the_other_streams_keys_unchanged():
    # The five streams a run had before the sixth (lora) was appended draw what they drew.
    before = jax.random.split(jax.random.key(0), 5)
    keys = RunKeys.from_seed(0)
    for name, key in zip(("init", "sft", "rollout", "ppo", "eval"), before):
        assert key_bytes(keys.streams[name]) == key_bytes(key)


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
