"""Tokenizers behind one small interface (encode, decode, special ids, chat template).

Public API:
  Tokenizer                  the abstract interface
  ByteTokenizer              UTF-8 bytes + pad/bos/eos, no files (the embedded default)
  HFTokenizer                transformers.AutoTokenizer from a local directory
  TOKENIZERS, load_tokenizer registry of named tokenizers; name or directory -> Tokenizer
"""

from mtrl.tokenizers.base import Tokenizer
from mtrl.tokenizers.byte import ByteTokenizer
from mtrl.tokenizers.hf import HFTokenizer
from mtrl.tokenizers.registry import TOKENIZERS, load_tokenizer

__all__ = ["ByteTokenizer", "HFTokenizer", "TOKENIZERS", "Tokenizer", "load_tokenizer"]
