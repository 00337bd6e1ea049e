"""Hugging Face tokenizers behind the mtrl `Tokenizer` interface.

Loaded with transformers.AutoTokenizer from a local directory only (local_files_only:
no network). Special ids come from the tokenizer; pad falls back to eos when the
tokenizer defines no pad token (Llama 3 and Qwen base models), which is safe because
padding is masked out of attention and losses.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from mtrl.tokenizers.base import Tokenizer, as_id_list


class HFTokenizer(Tokenizer):
    """Wraps a transformers PreTrainedTokenizer(Fast)."""

    def __init__(self, tokenizer: Any):
        self._tokenizer = tokenizer
        eos = tokenizer.eos_token_id
        if eos is None:
            raise ValueError("the tokenizer defines no eos token; the sampler needs one")
        self._eos = int(eos)
        pad = tokenizer.pad_token_id
        self._pad = self._eos if pad is None else int(pad)
        bos = tokenizer.bos_token_id
        self._bos = None if bos is None else int(bos)
        self._size = len(tokenizer)
        self._special = frozenset(int(i) for i in tokenizer.all_special_ids)

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, **kwargs: Any) -> "HFTokenizer":
        """Load from a local directory (tokenizer.json / tokenizer_config.json ...)."""
        from transformers import AutoTokenizer  # heavy import, only when needed

        if not os.path.isdir(path):
            raise FileNotFoundError(f"tokenizer directory {os.fspath(path)!r} does not exist")
        try:
            tokenizer = AutoTokenizer.from_pretrained(os.fspath(path), local_files_only=True,
                                                      **kwargs)
        except Exception as e:  # noqa: BLE001 -- transformers' errors name no file
            raise ValueError(_load_failure(path, e)) from e
        return cls(tokenizer)

    @property
    def hf_tokenizer(self) -> Any:
        """The wrapped transformers tokenizer."""
        return self._tokenizer

    def encode(self, text: str, *, add_bos: bool = False) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"encode takes str, got {type(text).__name__}")
        ids = list(self._tokenizer.encode(text, add_special_tokens=False))
        if add_bos and self._bos is not None:
            ids = [self._bos] + ids
        return ids

    def decode(self, ids: Iterable[int] | np.ndarray) -> str:
        # Out-of-range ids make the Rust decoder raise; specials are not content.
        kept = [i for i in as_id_list(ids) if 0 <= i < self._size and i not in self._special]
        try:
            return self._tokenizer.decode(kept, skip_special_tokens=True)
        except Exception:  # noqa: BLE001 - decode must never raise (module docstring)
            return "".join(self._safe_piece(i) for i in kept)

    def _safe_piece(self, token_id: int) -> str:
        try:
            return self._tokenizer.decode([token_id], skip_special_tokens=True)
        except Exception:  # noqa: BLE001
            return "\ufffd"

    @property
    def vocab_size(self) -> int:
        return self._size

    @property
    def eos_id(self) -> int:
        return self._eos

    @property
    def pad_id(self) -> int:
        return self._pad

    @property
    def bos_id(self) -> int | None:
        return self._bos

    @property
    def eos_text(self) -> str:
        # The token's own content: decode() skips specials, which eos always is.
        return str(self._tokenizer.convert_ids_to_tokens(self._eos))

    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self._tokenizer, "chat_template", None))

    def apply_chat_template(self, messages: Sequence[Mapping[str, str]], *,
                            add_generation_prompt: bool = True) -> str | None:
        if not self.has_chat_template:
            return None
        return self._tokenizer.apply_chat_template(
            [dict(m) for m in messages], tokenize=False,
            add_generation_prompt=add_generation_prompt)

    def __repr__(self) -> str:
        return f"HFTokenizer({type(self._tokenizer).__name__}, vocab_size={self._size})"


_JSON_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
               "added_tokens.json", "config.json")


def _load_failure(path: str | os.PathLike, error: Exception) -> str:
    """One line naming the file at fault: a JSON file of the directory that does not
    parse (a truncated download or copy), else the directory and transformers' error."""
    import json

    for name in _JSON_FILES:
        file = os.path.join(os.fspath(path), name)
        if not os.path.isfile(file):
            continue
        try:
            with open(file, encoding="utf-8") as f:
                json.load(f)
        except (ValueError, UnicodeDecodeError) as bad:
            return (f"tokenizer file {file!r} is not valid JSON ({bad}); it is truncated or "
                    "corrupt: copy or export the model directory again")
    text = " ".join(str(error).split())[:300]
    return f"could not load the tokenizer in {os.fspath(path)!r}: {type(error).__name__}: {text}"

