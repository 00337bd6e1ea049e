"""Control characters from candidates never leave the sandbox raw (issue 25, item 3).

Test messages, error types, stdout and stderr reach logs, transcripts and the next
prompt: ESC sequences there recolour or rewrite a terminal, CR and BS overwrite what
was printed, NUL truncates C strings. They arrive escaped (`\\x1b`), newline and
tab kept.
"""

from mtrl.envs.sandbox import Program
from mtrl.envs.sandbox.slot_client import valid_text

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
