"""Token histories, built by one set of functions for rollouts and SFT alike.

A branch's history for agent a after turns 1..t-1 is

    first_ids(prompt) + Σ_turns [completion tokens (stop token included)
                                 + next_ids(observation, stopped)]

or, when the environment resets the context (history modes "last", "feedback"),
first_ids(last observation). The rollout generator appends these pieces turn by
turn; SFT (`mtrl.training.sft.sft.prompt_token_ids`) lays out a demonstration's earlier
turns with the same calls, so an SFT row is token for token the row a rollout that
produced the same completions and observations trains on.
"""

from __future__ import annotations

from typing import Sequence


def first_ids(tokenizer, turn_format, prompt: str) -> list[int]:
    """A history's opening: the prompt rendered as a first turn, then encoded."""
    return tokenizer.encode(turn_format.first(prompt))


def next_ids(tokenizer, turn_format, observation: str, stopped: bool = True) -> list[int]:
    """What follows a completion: the turn's end (unless the completion already
    stopped on it), the observation and the cue for the next answer."""
    return tokenizer.encode(turn_format.next(observation, stopped))


def observation_ids(tokenizer, turn_format, observation: str, stopped: bool = True,
                    reset: bool = False) -> list[int]:
    """What a branch's next turn is sampled after, past its last completion: the
    observation appended (next_ids) or, when the environment resets the context, the
    observation as a fresh first prompt (first_ids) that replaces the history. The
    generator renders every child this way, and the evaluation's counterfactual turn
    (the observation swapped for a retry message) renders through the same call."""
    if reset:
        return first_ids(tokenizer, turn_format, observation)
    return next_ids(tokenizer, turn_format, observation, stopped)


def history_ids(tokenizer, turn_format, prompt: str,
                exchanges: Sequence[tuple[str, str]] = (), reset: bool = False) -> list[int]:
    """The history an answer is sampled after: `prompt`, then (completion text,
    observation) per earlier turn, each completion ended by the stop token."""
    if reset and exchanges:
        return first_ids(tokenizer, turn_format, exchanges[-1][1])
    ids = first_ids(tokenizer, turn_format, prompt)
    for completion, observation in exchanges:
        ids += tokenizer.encode(completion) + [tokenizer.eos_id]
        ids += next_ids(tokenizer, turn_format, observation, True)
    return ids
