"""The one interface every tokenizer in mtrl offers.

Token-in/token-out (docs/design.md section 1): text is encoded once for the prompt and the
sampled ids are what gets trained; `decode` only renders completions for environments,
so it must never raise, whatever the policy sampled (special ids, ids past the
vocabulary, byte sequences that are not valid UTF-8 -> U+FFFD replacement characters).
"""

from __future__ import annotations

import abc
from typing import Iterable, Mapping, Sequence

import numpy as np


def as_id_list(ids: Iterable[int] | np.ndarray) -> list[int]:
    """Plain Python ints from a list, numpy or jax array (0-d or 1-d)."""
    array = np.asarray(ids)
    if array.ndim > 1:
        raise ValueError(f"decode takes one sequence of ids, got shape {array.shape}")
    return [int(i) for i in array.reshape(-1)]


class Tokenizer(abc.ABC):
    """encode / decode / special ids / optional chat template."""

    @abc.abstractmethod
    def encode(self, text: str, *, add_bos: bool = False) -> list[int]:
        """Token ids of `text`; no special tokens unless add_bos (and bos_id exists)."""

    @abc.abstractmethod
    def decode(self, ids: Iterable[int] | np.ndarray) -> str:
        """Text of `ids` with special and unknown ids dropped; never raises on any ints."""

    @property
    @abc.abstractmethod
    def vocab_size(self) -> int:
        """Number of ids (the model's embedding table must have at least this many)."""

    @property
    @abc.abstractmethod
    def eos_id(self) -> int:
        """End-of-sequence id (the sampler stops a row when it samples it)."""

    @property
    @abc.abstractmethod
    def pad_id(self) -> int:
        """Id written into padding positions (never attended; any valid id works)."""

    @property
    @abc.abstractmethod
    def bos_id(self) -> int | None:
        """Beginning-of-sequence id, or None when the tokenizer has none."""

    @property
    def eos_text(self) -> str:
        """The text of the eos token as a chat template writes it (e.g. "<|im_end|>");
        decode([eos_id]) is empty because decode drops special tokens."""
        return self.decode([self.eos_id])

    @property
    def has_chat_template(self) -> bool:
        return False

    def apply_chat_template(self, messages: Sequence[Mapping[str, str]], *,
                            add_generation_prompt: bool = True) -> str | None:
        """The prompt text for chat `messages` ({'role', 'content'} dicts), ending with
        the assistant header when add_generation_prompt; None without a template."""
        del messages, add_generation_prompt
        return None
