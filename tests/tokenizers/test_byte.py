"""ByteTokenizer: lossless on any text, total on any ids."""

import numpy as np
import pytest

from mtrl.tokenizers import ByteTokenizer, Tokenizer, load_tokenizer

TEXTS = ["", "hello world", "déjà vu — naïve café", "日本語のテキスト",
         "emoji 🤖👩‍💻🏳️‍🌈", "tabs\tand\nnewlines\r\n", "nul\x00byte", "combining e\u0301 and \U0010ffff",
         "def f(x):\n    return x ** 2\n"]


@pytest.mark.parametrize("text", TEXTS)
def test_round_trip(text):
    tok = ByteTokenizer()
    ids = tok.encode(text)
    assert ids == list(text.encode("utf-8"))
    assert all(0 <= i < 256 for i in ids)
    assert tok.decode(ids) == text
    assert tok.decode(np.asarray(tok.encode(text, add_bos=True) + [tok.eos_id])) == text


def test_random_unicode_round_trip():
    rng = np.random.default_rng(0)
    tok = ByteTokenizer()
    for _ in range(50):
        points = rng.integers(0, 0x110000, size=rng.integers(1, 30))
        text = "".join(chr(p) for p in points if not 0xD800 <= p <= 0xDFFF)
        assert tok.decode(tok.encode(text)) == text


def test_invalid_utf8_and_bad_ids_never_raise():
    tok = ByteTokenizer()
    assert tok.decode([0xFF, 0xFE, ord("A")]) == "\ufffd\ufffdA"
    # A truncated 3-byte sequence (first two bytes of "€") then ASCII.
    assert tok.decode([0xE2, 0x82, ord("x")]) == "\ufffdx"
    assert tok.decode([-1, 259, 10**9, ord("o"), tok.pad_id, tok.bos_id, ord("k")]) == "ok"
    assert tok.decode([]) == ""
    assert tok.decode(np.asarray(ord("z"))) == "z"
    with pytest.raises(ValueError, match="one sequence"):
        tok.decode(np.zeros((2, 2), int))
    with pytest.raises(TypeError):
        tok.encode(b"bytes")


def test_special_ids_and_interface():
    tok = load_tokenizer("byte")
    assert isinstance(tok, ByteTokenizer) and isinstance(tok, Tokenizer)
    assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.vocab_size) == (256, 257, 258, 259)
    assert tok.encode("a", add_bos=True) == [257, 97]
    assert not tok.has_chat_template
    assert tok.apply_chat_template([{"role": "user", "content": "hi"}]) is None
    with pytest.raises(ValueError, match="byte"):
        load_tokenizer("no-such-tokenizer")
