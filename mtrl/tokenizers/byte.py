"""Byte-level tokenizer that needs no files: the embedded default.

Ids 0..255 are the UTF-8 bytes of the text; then pad = 256, bos = 257, eos = 258, so
vocab_size = 259 (the 'tiny' and 'qwen2-3m' model presets match it). Decoding drops
special and out-of-range ids and turns invalid UTF-8 into U+FFFD.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from mtrl.tokenizers.base import Tokenizer, as_id_list

NUM_BYTES = 256


class ByteTokenizer(Tokenizer):
    """UTF-8 bytes as token ids plus three special ids after them."""

    PAD, BOS, EOS = NUM_BYTES, NUM_BYTES + 1, NUM_BYTES + 2

    def encode(self, text: str, *, add_bos: bool = False) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"encode takes str, got {type(text).__name__}")
        # surrogatepass: lone surrogates (possible in Python str) still encode losslessly
        # to bytes instead of raising.
        ids = list(text.encode("utf-8", errors="surrogatepass"))
        return [self.BOS] + ids if add_bos else ids

    def decode(self, ids: Iterable[int] | np.ndarray) -> str:
        data = bytes(i for i in as_id_list(ids) if 0 <= i < NUM_BYTES)
        return data.decode("utf-8", errors="replace")

    @property
    def vocab_size(self) -> int:
        return NUM_BYTES + 3

    @property
    def eos_id(self) -> int:
        return self.EOS

    @property
    def pad_id(self) -> int:
        return self.PAD

    @property
    def bos_id(self) -> int:
        return self.BOS

    def __repr__(self) -> str:
        return "ByteTokenizer()"
