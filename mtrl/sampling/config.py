"""Sampling configuration: how the next token is drawn from the model's logits."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class SamplingConfig:
    """Static (compile-time) sampling settings; hashable, so it can be a jit static arg.

    The sampling distribution applied to raw logits `z` [V] is, in this order
    (the order of Hugging Face `generate`):

      1. temperature:  z / temperature
      2. top-k:        keep the `top_k` largest scaled logits (0 = off)
      3. top-p:        keep the smallest set of the largest remaining logits whose
                       probability mass is >= `top_p` (1.0 = off), computed on the
                       distribution left by steps 1-2 (Holtzman et al. 2020,
                       "The Curious Case of Neural Text Degeneration")
      4. softmax over the kept tokens; draw one token.

    `greedy=True` ignores 1-4 and takes argmax z (ties: the lowest token id).

    Fields:
      temperature:     > 0. Ignored when greedy.
      top_p:           in (0, 1].
      top_k:           >= 0; 0 disables the filter.
      greedy:          argmax decoding (deterministic).
      max_new_tokens:  > 0; the static length T of the output buffers and the largest
                       number of tokens any row may generate. Rows may be given a smaller
                       per-row budget at call time.
      stop_token_ids:  tokens that end a row (the stop token is kept in the output and
                       in the cache). Per-row stop sets can also be passed at call time.
      pad_id:          written into the output after a row ends, and into the cache
                       slots (marked invalid) of finished rows.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    greedy: bool = False
    max_new_tokens: int = 128
    stop_token_ids: tuple[int, ...] = ()
    pad_id: int = 0

    def __post_init__(self):
        if not self.temperature > 0.0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0 disables it), got {self.top_k}")
        if self.max_new_tokens <= 0:
            raise ValueError(f"max_new_tokens must be > 0, got {self.max_new_tokens}")
        if not isinstance(self.stop_token_ids, tuple):
            # A list would make the config unhashable (it is a jit static argument).
            raise ValueError(
                f"stop_token_ids must be a tuple of ints, got {type(self.stop_token_ids).__name__}"
            )
        if any(int(t) < 0 for t in self.stop_token_ids):
            raise ValueError(f"stop_token_ids must be >= 0, got {self.stop_token_ids}")
        if self.pad_id < 0:
            raise ValueError(f"pad_id must be >= 0, got {self.pad_id}")
