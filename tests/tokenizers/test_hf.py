"""HFTokenizer on a tokenizer built locally with the `tokenizers` library (no download)."""

import pytest
import transformers
from tokenizers import Tokenizer as RustTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers

from mtrl.tokenizers import HFTokenizer, Tokenizer, load_tokenizer

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SPECIALS = ["<|endoftext|>", "<|pad|>", "<|im_start|>", "<|im_end|>"]
CORPUS = ["def add(a, b):\n    return a + b\n", "the quick brown fox jumps over the lazy dog",
          "héllo wörld ✓ 日本", "assert add(1, 2) == 3"] * 5


def build_tokenizer(chat_template=CHAT_TEMPLATE, pad=True):
    """Byte-level BPE trained on a few strings, wrapped as a transformers fast tokenizer."""
    rust = RustTokenizer(models.BPE())
    rust.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    rust.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    rust.train_from_iterator(CORPUS, trainer=trainer)
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=rust, eos_token="<|endoftext|>",
        pad_token="<|pad|>" if pad else None, chat_template=chat_template)


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("hf_tokenizer")
    build_tokenizer().save_pretrained(directory)
    return directory


def test_loads_through_the_interface(tokenizer_dir):
    tok = load_tokenizer(tokenizer_dir)
    assert isinstance(tok, HFTokenizer) and isinstance(tok, Tokenizer)
    reference = transformers.AutoTokenizer.from_pretrained(tokenizer_dir)
    assert tok.eos_id == reference.convert_tokens_to_ids("<|endoftext|>")
    assert tok.pad_id == reference.convert_tokens_to_ids("<|pad|>")
    assert tok.bos_id is None
    assert tok.vocab_size == len(reference) >= 256 + len(SPECIALS)


@pytest.mark.parametrize("text", CORPUS[:4] + ["unseen wørds 🤖 in text"])
def test_encode_decode_round_trip(tokenizer_dir, text):
    tok = HFTokenizer.from_pretrained(tokenizer_dir)
    ids = tok.encode(text)
    assert ids and tok.eos_id not in ids
    assert tok.decode(ids) == text
    assert tok.decode(ids + [tok.eos_id, tok.pad_id]) == text  # specials dropped


def test_decode_never_raises(tokenizer_dir):
    tok = HFTokenizer.from_pretrained(tokenizer_dir)
    # Half of a multi-byte character: byte-level pieces that are not valid UTF-8.
    first_byte = tok.hf_tokenizer.convert_tokens_to_ids("â")  # byte 0xE2 in GPT-2 bytes
    assert "\ufffd" in tok.decode([first_byte])
    assert tok.decode([-5, 10**9, tok.vocab_size]) == ""
    assert tok.decode([]) == ""


def test_chat_template(tokenizer_dir):
    tok = HFTokenizer.from_pretrained(tokenizer_dir)
    assert tok.has_chat_template
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]
    prompt = tok.apply_chat_template(messages)
    assert prompt == ("<|im_start|>system\nBe brief.<|im_end|>\n"
                      "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n")
    assert not tok.apply_chat_template(messages, add_generation_prompt=False).endswith(
        "assistant\n")
    # Template markers are single special tokens, not split into bytes.
    assert tok.encode("<|im_start|>")[0] == tok.hf_tokenizer.convert_tokens_to_ids("<|im_start|>")


def test_without_template_or_pad(tmp_path):
    build_tokenizer(chat_template=None, pad=False).save_pretrained(tmp_path)
    tok = HFTokenizer.from_pretrained(tmp_path)
    assert not tok.has_chat_template
    assert tok.apply_chat_template([{"role": "user", "content": "hi"}]) is None
    assert tok.pad_id == tok.eos_id  # pad falls back to eos
    with pytest.raises(FileNotFoundError):
        HFTokenizer.from_pretrained(tmp_path / "missing")


def test_eos_text_is_the_special_tokens_content(tmp_path):
    """decode drops special tokens, so the end-of-turn text must come from the token
    itself; otherwise a chat history writes the end marker twice."""
    from tests.tokenizers.chatml import build_chatml_tokenizer

    build_chatml_tokenizer().save_pretrained(tmp_path)
    tok = HFTokenizer.from_pretrained(tmp_path)
    assert tok.decode([tok.eos_id]) == ""
    assert tok.eos_text == "<|im_end|>"
    assert tok.encode(tok.eos_text) == [tok.eos_id]


def test_a_truncated_tokenizer_file_is_named(tmp_path):
    build_tokenizer().save_pretrained(tmp_path)
    file = tmp_path / "tokenizer.json"
    file.write_text(file.read_text()[:2000])  # a copy cut short
    with pytest.raises(ValueError) as error:
        HFTokenizer.from_pretrained(tmp_path)
    message = str(error.value)
    assert str(file) in message and "not valid JSON" in message and "\n" not in message
