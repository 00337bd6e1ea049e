"""Tokenizers by name or path: `load_tokenizer('byte')`, `load_tokenizer('/ckpt/dir')`."""

from __future__ import annotations

import os
from typing import Callable

from mtrl.registry import Registry
from mtrl.tokenizers.base import Tokenizer
from mtrl.tokenizers.byte import ByteTokenizer
from mtrl.tokenizers.hf import HFTokenizer

TOKENIZERS: Registry[Callable[[], Tokenizer]] = Registry("tokenizer")
TOKENIZERS.register("byte")(ByteTokenizer)


def load_tokenizer(spec: str | os.PathLike) -> Tokenizer:
    """A registered name (e.g. 'byte') or a local directory with a Hugging Face tokenizer."""
    spec_str = os.fspath(spec)
    if spec_str in TOKENIZERS:
        return TOKENIZERS.get(spec_str)()
    if os.path.isdir(spec_str):
        return HFTokenizer.from_pretrained(spec_str)
    raise ValueError(f"tokenizer spec {spec_str!r} is neither a registered name "
                     f"({', '.join(TOKENIZERS.names())}) nor a directory")
