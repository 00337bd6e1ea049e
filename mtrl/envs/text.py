"""Completion text as every environment reads it: clean, bounded `str`.

    decode_completion(completion, max_chars) -> str

bytes are UTF-8 with errors='replace'; lone surrogates become '?', NUL bytes are
dropped, newlines are normalised, and the text is capped at `max_chars` characters
before anything parses it (enormous outputs cost bounded time)."""

from __future__ import annotations

MAX_COMPLETION_CHARS = 64_000


def decode_completion(completion: str | bytes, max_chars: int = MAX_COMPLETION_CHARS) -> str:
    """Completion text as clean, bounded `str` (module docstring)."""
    if max_chars <= 0:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    if isinstance(completion, (bytes, bytearray, memoryview)):
        # A UTF-8 character is at most 4 bytes: this cap never cuts wanted text.
        text = bytes(completion[: 4 * max_chars]).decode("utf-8", errors="replace")
    elif isinstance(completion, str):
        text = completion
    else:
        raise TypeError(f"completion must be str or bytes, got {type(completion).__name__}")
    text = text[:max_chars]
    text = text.encode("utf-8", errors="replace").decode("utf-8")
    return text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")
