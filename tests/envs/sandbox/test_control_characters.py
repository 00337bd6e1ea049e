"""Control, invisible and reordering characters from candidates never leave the
sandbox raw.

Test messages, error types, stdout and stderr reach logs, transcripts and the next
prompt: ESC sequences there recolour or rewrite a terminal, CR and BS overwrite what
was printed, NUL truncates C strings; bidi overrides and isolates show text in
another order than a tokenizer reads it, zero-width characters and the tag block
hide words. They arrive escaped (`\\x1b`, `\\u202e`, `\\U000e0041`), newline and
tab kept, every ordinary letter, mark, symbol and emoji as it was.
"""

import unicodedata

import pytest

from mtrl.envs.sandbox import Program
from mtrl.envs.sandbox.slot_client import valid_text
from mtrl.envs.sandbox.visible_text import visible

NASTY = "a\x1b[31mb\x07c\rd\x08e\x00f\x7fg\x9bh\n\ti"
CODE = (f"import sys\nNASTY = {NASTY!r}\n"
        "Odd = type('Odd' + NASTY.replace(chr(0), ''), (Exception,), {})\n"
        "def f():\n    return NASTY\n"
        "def out():\n    print(NASTY)\n    print(NASTY, file=sys.stderr)\n    return 1\n"
        "def boom():\n    raise ValueError(NASTY)\n"
        "def odd():\n    raise Odd(NASTY)\n")


def _raw_controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) < 0xa0]


def test_control_characters_are_escaped_in_verdicts_and_output(pool):
    tests = ("assert f() == 'x', f()", "assert out() == 1", "boom()", "odd()")
    result = pool.submit(Program(CODE, tests)).result()
    texts = [result.stdout, result.stderr]
    texts += [t.message for t in result.tests] + [t.error_type for t in result.tests]
    assert [t.status for t in result.tests] == ["failed", "passed", "error", "error"], result
    for text in texts:
        assert not _raw_controls(text), repr(text)
    assert "\\x1b[31mb\\x07c\\x0dd\\x08e\\x00f" in result.stdout, repr(result.stdout)
    assert "\n\ti" in result.stderr and "\\x1b" in result.tests[0].message
    assert result.tests[2].error_type == "ValueError" and "\\x00" in result.tests[2].message
    assert result.tests[3].error_type.startswith("Odda\\x1b"), result.tests[3]


def test_escaping_keeps_ordinary_text():
    assert valid_text("déjà vu\n\tok ✓") == "déjà vu\n\tok ✓"
    assert valid_text("\x1b\x00\r") == "\\x1b\\x00\\x0d"
    assert valid_text("\ud800") == "?"  # a lone surrogate: still valid UTF-8


def test_a_forged_syntax_error_is_escaped_too(pool):
    # The candidate writes its own hello (fd 3 is its socket to the judge), claiming
    # a syntax error whose message carries an escape sequence.
    code = ("import json, os, struct, time\n"
            "hello = json.dumps({'syntax_error': [1, 2, 'bad\\x1b]0;title\\x07 \\x00']}).encode()\n"
            "os.write(3, struct.pack('>I', len(hello)) + hello)\ntime.sleep(30)\n")
    result = pool.submit(Program(code, ("assert True",))).result()
    assert result.syntax_error is not None and not result.passed, result
    assert result.syntax_error.message == "bad\\x1b]0;title\\x07 \\x00", result.syntax_error
    assert not _raw_controls(result.tests[0].message), result.tests


# Bidi embeddings, overrides, isolates and marks; zero-width characters; tag
# characters (an invisible "ignore" spelt in the tag block); variation selectors,
# the soft hyphen, a Hangul filler, the line separator, private use, unassigned.
HIDDEN = ("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
          "\u200b\u200c\u200d\u2060\ufeff" + "".join(chr(0xE0000 + ord(c)) for c in "ignore")
          + "\U000e0001\U000e007f\ufe0f\U000e0100\u00ad\u3164\u034f\u2028\u2029"
          "\ue000\U000f0000\u0378\U000e0fff\u180e")
HONEST = "déjà vu, 中文, مرحبا, עברית, e\u0301, 😀 ✓ \u00a0nbsp \u3000ideographic\n\tend"


def _raw_hidden(text: str) -> list[str]:
    """Characters of `text` that render as nothing or reorder the display."""
    return [c for c in text if c in HIDDEN or (c not in "\n\t" and (
        unicodedata.category(c) in ("Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp")))]


def test_invisible_and_reordering_characters_are_written_out():
    out = valid_text(f"x{HIDDEN}y")
    assert not _raw_hidden(out), [hex(ord(c)) for c in _raw_hidden(out)]
    assert out.startswith("x\\u202a\\u202b") and out.endswith("\\u180ey")
    assert "\\U000e0069\\U000e0067" in out  # the tag block's "ig", readable
    assert visible(out) == out  # an escape is printable ASCII: idempotent


@pytest.mark.parametrize("char", list(HIDDEN))
def test_each_hidden_character_alone_is_escaped(char):
    assert valid_text(char) == (f"\\x{ord(char):02x}" if ord(char) < 0x100 else
                                f"\\u{ord(char):04x}" if ord(char) < 0x10000 else
                                f"\\U{ord(char):08x}")


def test_ordinary_non_ascii_text_comes_through_unchanged():
    assert valid_text(HONEST) == HONEST
    assert visible("ligne\u00a0insécable — «\u202fguillemets\u202f»") == (
        "ligne\u00a0insécable — «\u202fguillemets\u202f»")  # spaces (Zs) are spaces


def test_hidden_characters_from_a_candidate_reach_no_field(pool):
    code = (f"import sys\nHIDDEN = {HIDDEN!r}\nHONEST = {HONEST!r}\n"
            "Odd = type('Odd' + HIDDEN, (Exception,), {})\n"
            "def f():\n    return HIDDEN\n"
            "def out():\n    print(HIDDEN + HONEST)\n    print(HIDDEN, file=sys.stderr)\n"
            "    return 1\n"
            "def boom():\n    raise ValueError(HIDDEN + HONEST)\n"
            "def odd():\n    raise Odd(HIDDEN)\n")
    tests = ("assert f() == 'x', f()", "assert out() == 1", "boom()", "odd()")
    result = pool.submit(Program(code, tests)).result()
    assert [t.status for t in result.tests] == ["failed", "passed", "error", "error"], result
    texts = [result.stdout, result.stderr]
    texts += [t.message for t in result.tests] + [t.error_type for t in result.tests]
    for text in texts:
        assert not _raw_hidden(text), (text, [hex(ord(c)) for c in _raw_hidden(text)])
    assert "\\u202e" in result.stdout and HONEST.split("\n")[0] in result.stdout
    assert "\\u202e" in result.tests[0].message and "\\U000e0069" in result.stderr
    assert "déjà vu, 中文, مرحبا, עברית, e\u0301, 😀 ✓" in result.tests[2].message
    assert result.tests[3].error_type.startswith("Odd\\u202a"), result.tests[3]
