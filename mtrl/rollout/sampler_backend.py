"""Policy backends over the jitted KV-cache sampler.

`SamplerBackend` is the production path: the first turn prefills each distinct
prompt once and fans its cache out to the G samples; later turns gather the parent
rows of the previous turn's cache and append only the observation tokens
(`Sampler.extend_and_generate`), so a branch's history is never re-encoded.

`NaiveBackend` is the baseline and the second implementation: every turn it
re-encodes every sample's whole history from scratch, with no prefix sharing
(one prefill per sample). Both draw from the same distribution; with greedy
decoding they must produce the same tokens and log-probabilities.

Agents with separate parameters share one `Sampler` (one set of compiled
programs) and swap parameter states per call; shapes are identical, so the swap
never recompiles.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import jax
import numpy as np
from flax import nnx

from mtrl.rollout.backend import Contexts, PolicyBackend, Samples
from mtrl.sampling import SamplingConfig
from mtrl.sampling.sampler import Generation, Sampler


@dataclasses.dataclass
class _Pending:
    """Device state of a Contexts: a previous generation plus rows/tokens to append."""

    generation: Generation | None  # None before the first turn
    rows: Sequence[int] = ()
    new_tokens: Sequence[Sequence[int]] = ()


class SamplerBackend(PolicyBackend):
    """Samples with KV-cache reuse across turns.

    states: one parameter state per agent (`nnx.split(model)[1]`), or a single state
      shared by all agents (agents then differ only by their role prompts).
    """

    def __init__(self, sampler: Sampler, states: Sequence[nnx.State],
                 config: SamplingConfig):
        self.sampler = sampler
        self.states = list(states)
        self.config = config

    def set_states(self, states: Sequence[nnx.State]) -> None:
        self.states = list(states)

    def _use(self, agent: int) -> None:
        self.sampler.set_state(self.states[agent if len(self.states) > 1 else 0])

    def begin(self, agent, prompts):
        return Contexts(tokens=[list(p) for p in prompts], state=_Pending(None, (), prompts))

    def generate(self, agent, contexts, num_samples, max_new_tokens, key):
        self._use(agent)
        pending: _Pending = contexts.state
        if pending.generation is None:
            gen = self.sampler.generate(
                [list(p) for p in pending.new_tokens], key, self.config,
                num_samples=num_samples, max_new_tokens=list(max_new_tokens))
        else:
            gen = self.sampler.extend_and_generate(
                pending.generation.cache, pending.rows, pending.new_tokens, key, self.config,
                num_samples=num_samples, max_new_tokens=list(max_new_tokens))
        samples = _to_samples(gen)
        histories = [contexts.tokens[i // num_samples] + samples.tokens[i]
                     for i in range(len(samples.tokens))]
        return samples, Contexts(tokens=histories, state=_Pending(gen))

    def extend(self, agent, contexts, rows, new_tokens):
        pending: _Pending = contexts.state
        if pending.generation is None:
            raise ValueError("extend() needs contexts returned by generate()")
        tokens = [contexts.tokens[r] + list(t) for r, t in zip(rows, new_tokens)]
        return Contexts(tokens=tokens, state=_Pending(pending.generation, list(rows),
                                                      [list(t) for t in new_tokens]))


class NaiveBackend(PolicyBackend):
    """Re-encodes each sample's full history every turn (no cache reuse, no sharing)."""

    def __init__(self, sampler: Sampler, states: Sequence[nnx.State],
                 config: SamplingConfig):
        self.sampler = sampler
        self.states = list(states)
        self.config = config

    def begin(self, agent, prompts):
        return Contexts(tokens=[list(p) for p in prompts])

    def generate(self, agent, contexts, num_samples, max_new_tokens, key):
        self.sampler.set_state(self.states[agent if len(self.states) > 1 else 0])
        gen = self.sampler.generate(contexts.tokens, key, self.config, num_samples=num_samples,
                                    max_new_tokens=list(max_new_tokens), share_prefix=False)
        samples = _to_samples(gen)
        histories = [contexts.tokens[i // num_samples] + samples.tokens[i]
                     for i in range(len(samples.tokens))]
        return samples, Contexts(tokens=histories)

    def extend(self, agent, contexts, rows, new_tokens):
        return Contexts(tokens=[contexts.tokens[r] + list(t) for r, t in zip(rows, new_tokens)])


def _to_samples(gen: Generation) -> Samples:
    out = jax.device_get(gen.output)
    lengths = np.asarray(out.lengths)
    tokens = [np.asarray(out.tokens[i, :n]).tolist() for i, n in enumerate(lengths)]
    logprobs = [np.asarray(out.logprobs[i, :n], np.float32) for i, n in enumerate(lengths)]
    return Samples(tokens=tokens, logprobs=logprobs)
