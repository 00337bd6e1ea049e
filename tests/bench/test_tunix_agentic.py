"""bench/tunix_agentic.py's token accounting: the closed forms of `layout` (which the
benchmark checks every measured call against) equal a brute-force walk over the episodes,
and the Tunix side's trivial chat template gives back exactly the history's token ids."""

import itertools

import pytest

from bench import tunix_agentic as bench


def walk(prompts, samples, turns, prompt_len, obs_len, new_tokens):
    """Counts by enumerating every episode turn by turn (the second implementation)."""
    chains = dict(generated=0, tunix_prefill=0, slots=0, chains_prefill=prompts * prompt_len)
    longest = 0
    for _ in range(prompts * samples):
        history = prompt_len
        for turn in range(turns):
            if turn:
                chains["chains_prefill"] += obs_len
            chains["tunix_prefill"] += history
            longest = max(longest, history)
            chains["generated"] += new_tokens
            history += new_tokens + obs_len
    chains["slots"] = prompts * samples * turns * longest
    tree = dict(generated=0, prefill=prompts * prompt_len, leaves=0)
    for _ in range(prompts):
        for depth in range(1, turns + 1):
            for _path in itertools.product(range(samples), repeat=depth):
                tree["generated"] += new_tokens
                tree["prefill"] += obs_len if depth < turns else 0
        tree["leaves"] += samples ** turns
    return chains, tree, longest


@pytest.mark.parametrize("shape", [(4, 4, 2, 48, 8, 32), (2, 3, 4, 5, 2, 7), (1, 1, 1, 3, 1, 1)])
def test_layout_matches_a_walk_over_the_episodes(shape):
    plan = bench.layout(*shape)
    chains, tree, longest = walk(*shape)
    assert plan["generated"] == chains["generated"]
    assert plan["tunix_prefill_tokens"] == chains["tunix_prefill"]
    assert plan["tunix_max_prompt"] == longest
    assert plan["tunix_prefill_slots"] == chains["slots"]
    assert plan["chains_prefill_tokens"] == chains["chains_prefill"]
    assert (plan["tree_generated"], plan["tree_prefill_tokens"], plan["tree_leaves"]) == (
        tree["generated"], tree["prefill"], tree["leaves"])


def test_layout_by_hand():
    # P=4, G=4, T=2, L=48, O=8, M=32: histories 48 and 88; Tunix prefills 16*(48+88).
    plan = bench.layout(4, 4, 2, 48, 8, 32)
    assert plan["history_per_turn"] == [48, 88]
    assert plan["generated"] == 1024 and plan["tunix_prefill_tokens"] == 2176
    assert plan["chains_prefill_tokens"] == 4 * 48 + 16 * 8
    assert plan["tree_generated"] == 4 * 32 * (4 + 16) and plan["tree_leaves"] == 64


def test_the_trivial_template_is_the_history_token_for_token():
    prompt, completion, observation = [5, 6, 7], [9, 10], bench.observation_ids(4)
    messages = [{"role": "system", "content": ""},
                {"role": "user", "content": " ".join(map(str, prompt))},
                {"role": "assistant", "content": " ".join(map(str, completion))},
                {"role": "user", "content": " ".join(map(str, observation))}]
    text = bench.joined(messages)
    assert bench.IdTokenizer().encode(text) == prompt + completion + observation
    assert len(observation) == 4 and all(3 <= t < bench.SHAPE["vocab_size"] for t in observation)
