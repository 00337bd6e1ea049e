"""Candidate-derived text as it may reach a prompt, a log or a terminal: valid UTF-8,
every character either visible or ordinary whitespace.

    visible(text) -> str      invisible and reordering characters written out
    valid_text(value) -> str  str(value) as valid UTF-8, then visible()

Written out (as `\\x1b`, `\\u202e`, `\\U000e0041`, Python's escapes for them):
- C0 controls but newline and tab, DEL and C1 (0x9b is a one-byte CSI): they move
  a terminal's cursor, ring it, rewrite a line (CR, BS) or cut a C string (NUL);
- every other character `str.isprintable` refuses except the spaces of category Zs
  (U+00A0, U+3000, ...): format characters (Cf: bidi embeddings, overrides,
  isolates and marks, zero-width space and joiners, the word joiner, U+FEFF, the
  tag block's characters, the soft hyphen, ...), line and paragraph separators
  (Zl, Zp), private use (Co) and unassigned code points (Cn), whose look no one
  can know;
- the rest of Unicode's Default_Ignorable_Code_Point set, which renders as nothing
  though its category is a mark or a letter: variation selectors, the combining
  grapheme joiner, Hangul fillers, Mongolian free variation selectors, Khmer
  inherent vowels.
So no candidate text can hide a word from a reader of the prompt or log, nor show
its characters in another order than the one a tokenizer reads (Trojan Source).
Ordinary letters of every script, marks, symbols and emoji are kept as they are.
An escape is printable ASCII, so visible() is idempotent.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any

# Default_Ignorable_Code_Point (Unicode's DerivedCoreProperties.txt) members whose
# category str.isprintable accepts (Mn, Lo); its Cf and Cn members are caught by
# the category rule.
_IGNORABLE_PRINTABLE = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5),
                        (0x180B, 0x180D), (0x180F, 0x180F), (0x3164, 0x3164),
                        (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xE0100, 0xE01EF))
_KEPT = "\n\t"  # whitespace a line structure needs (feedback flattens it anyway)
_ASCII_CONTROLS = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7f)
                   if chr(code) not in _KEPT}


def _hidden(char: str) -> bool:
    """Whether visible() writes `char` out (module docstring)."""
    code = ord(char)
    if any(low <= code <= high for low, high in _IGNORABLE_PRINTABLE):
        return True
    return (not char.isprintable() and unicodedata.category(char) != "Zs"
            and char not in _KEPT)


@functools.lru_cache(maxsize=1 << 14)
def _written(char: str) -> str:
    """`char` as visible() writes it (cached: a hostile text repeats a few)."""
    if not _hidden(char):  # an astral character the pattern matched wholesale
        return char
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


@functools.cache
def _pattern() -> re.Pattern[str]:
    """The hidden characters of the BMP as one class (a bitmap in `re`, one lookup
    a character) or any astral character, which _written looks at one by one (rare
    in honest text: emoji, historic scripts). Built on first use."""
    codes = [code for code in range(0x10000) if _hidden(chr(code))]
    ranges, start, previous = [], codes[0], codes[0]
    for code in codes[1:] + [-1]:
        if code != previous + 1:
            ranges.append(re.escape(chr(start)) if previous == start else
                          f"{re.escape(chr(start))}-{re.escape(chr(previous))}")
            start = code
        previous = code
    return re.compile("[" + "".join(ranges) + "\\U00010000-\\U0010ffff]")


def visible(text: str) -> str:
    """`text` with every invisible or reordering character written out (module doc)."""
    if text.isascii():
        return text.translate(_ASCII_CONTROLS)
    return _pattern().sub(lambda match: _written(match.group()), text)


def valid_text(value: Any) -> str:
    """Candidate-derived text as valid UTF-8 and visible(): lone surrogates (which
    JSON carries and `raise ValueError(chr(0xdc80))` makes) would crash a tokenizer
    downstream, so they become '?'."""
    text = str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return visible(text)
