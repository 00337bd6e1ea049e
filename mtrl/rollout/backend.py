"""What the trajectory generator needs from a policy: sample G completions per
context and keep each branch's state (its KV cache) alive between turns.

The generator only ever asks for three things, per agent:

  begin(prompts)                 one context per task
  generate(contexts, G)          G samples per context; returns the samples and the
                                 contexts extended by them (rows = context·G + g)
  extend(contexts, rows, toks)   keep the chosen rows (the children's parents) and
                                 append each child's observation tokens

so a backend decides how histories are held on the device. `SamplerBackend`
(sampler_backend.py) keeps KV caches and extends them; `NaiveBackend` re-encodes
every history from scratch each turn (the benchmark's baseline and a second
implementation for tests); scripted backends make trees checkable by hand.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, Sequence

import jax
import numpy as np


@dataclasses.dataclass
class Contexts:
    """One agent's rows: each row's token history on the host plus the backend's
    device-side state for the same rows (None for stateless backends)."""

    tokens: list[list[int]]  # [rows] token histories (prompt, completions, observations)
    state: Any = None


@dataclasses.dataclass
class Samples:
    """G samples per context, row-major: row = context·G + g."""

    tokens: list[list[int]]  # [rows] sampled token ids, stop token included
    logprobs: list[np.ndarray]  # [rows] float32 [len]: log π(token | history), temperature 1


class PolicyBackend(abc.ABC):
    """Generates completions for one agent at a time (agent = index into params)."""

    @abc.abstractmethod
    def begin(self, agent: int, prompts: Sequence[Sequence[int]]) -> Contexts:
        """Contexts holding the prompts, one row per prompt."""

    @abc.abstractmethod
    def generate(self, agent: int, contexts: Contexts, num_samples: int,
                 max_new_tokens: Sequence[int], key: jax.Array) -> tuple[Samples, Contexts]:
        """Draws `num_samples` completions per row of `contexts`.

        max_new_tokens[i] caps row i's completion (the generator lowers it when the
        context budget is nearly spent). Returns the samples and the contexts with
        each sample appended (rows = i·num_samples + g).
        """

    @abc.abstractmethod
    def extend(self, agent: int, contexts: Contexts, rows: Sequence[int],
               new_tokens: Sequence[Sequence[int]]) -> Contexts:
        """Keeps `rows` (in that order, repeats allowed) and appends new_tokens[i] to
        the i-th kept row."""

    def close(self) -> None:
        """Frees device memory or compiled state the backend holds."""
