"""rollout(first_group=o): one process's share of a multi-process step draws the keys
that one process with env groups draws for the same tasks (generator.py), so P
processes grow the trees of a single process with P groups."""

import jax
import numpy as np

from mtrl.rollout import RolloutConfig, rollout

from tests.rollout.scripted import CharTokenizer, ScriptedBackend, ScriptedEnv


class KeyLog(ScriptedBackend):
    """The scripted policy, recording each generate call's agent, rows and key."""

    def __init__(self):
        super().__init__()
        self.keys = []

    def generate(self, agent, contexts, num_samples, max_new_tokens, key):
        self.keys.append((agent, len(contexts.tokens),
                           tuple(np.asarray(jax.random.key_data(key)).ravel().tolist())))
        return super().generate(agent, contexts, num_samples, max_new_tokens, key)


def _config(groups):
    return RolloutConfig(num_turns=2, num_generations=2, num_agents=2, joint_mode="align",
                         termination_threshold=0.5, max_new_tokens=32, max_context=4096,
                         env_groups=groups)


def test_two_shares_draw_the_keys_of_two_groups():
    tasks, key = [0, 1, 2, 3], jax.random.key(3)
    whole = KeyLog()
    rollout(tasks, ScriptedEnv(2), whole, CharTokenizer(), _config(2), key)
    shares = []
    for p in range(2):
        log = KeyLog()
        rollout(tasks[2 * p:2 * p + 2], ScriptedEnv(2), log, CharTokenizer(), _config(1), key,
                first_group=p)
        shares.append(log.keys)
    # The whole run interleaves groups within a turn; compare per (turn-ordered) group.
    assert sorted(whole.keys) == sorted(shares[0] + shares[1])
    assert shares[0] != shares[1]  # the groups' keys differ
    # Without first_group a lone share would draw other keys (the K = 1 path).
    plain = KeyLog()
    rollout(tasks[2:], ScriptedEnv(2), plain, CharTokenizer(), _config(1), key)
    assert sorted(plain.keys) != sorted(shares[1])
