"""Jitted KV-cache sampling: prefill, decode, cache extension, prefix fan-out.

Functional core (split NNX models `graphdef, state = nnx.split(model)`; jit with graphdef
and config static; `jax.vmap` over stacked agents' states works):
  prefill(graphdef, state, cache, tokens [B, L], token_mask [B, L]) -> (cache, last_logits [B, V])
      (appending a chunk to a filled cache is the same call: cache extension)
  decode(graphdef, state, cache, last_logits, key, config, max_new_tokens [B], stop_tokens [B, K])
      -> (SampleOutput, cache)
Host front end: `Sampler.generate` / `Sampler.extend_and_generate` -> `Generation`
(bucketing, one prefill per distinct prompt, fan-out to G samples, multi-turn cache
extension, compile counting). Which distribution each log-probability is under: see
`SampleOutput`.
"""

from mtrl.sampling.buckets import BucketPolicy, cache_rows, grow_cache, pad_token_rows
from mtrl.sampling.config import SamplingConfig
from mtrl.sampling.decode import decode
from mtrl.sampling.filters import (filter_logits, greedy_tokens, sample_tokens,
                                   scale_by_temperature, token_log_probs, top_k_filter,
                                   top_p_filter)
from mtrl.sampling.output import SampleOutput
from mtrl.sampling.prefill import prefill
from mtrl.sampling.sampler import Generation, Sampler
from mtrl.sampling.tracing import TraceCounter

__all__ = [
    "BucketPolicy",
    "Generation",
    "SampleOutput",
    "Sampler",
    "SamplingConfig",
    "TraceCounter",
    "cache_rows",
    "decode",
    "filter_logits",
    "greedy_tokens",
    "grow_cache",
    "pad_token_rows",
    "prefill",
    "sample_tokens",
    "scale_by_temperature",
    "token_log_probs",
    "top_k_filter",
    "top_p_filter",
]
