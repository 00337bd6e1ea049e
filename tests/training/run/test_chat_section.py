"""config.chat.system_prompts -> one turn format per agent (mtrl/training/run/chat.py)."""

import pytest

from mtrl.rollout import ChatTemplateFormat, PlainFormat
from mtrl.tokenizers import ByteTokenizer, HFTokenizer
from mtrl.training.run.chat import ChatSection, build_turn_format
from mtrl.training.config import base_config
from mtrl.training.config.readers import read_section
from tests.tokenizers.chatml import build_chatml_tokenizer


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = tmp_path_factory.mktemp("chatml")
    build_chatml_tokenizer().save_pretrained(path)
    return HFTokenizer.from_pretrained(path)


def test_default_is_one_shared_format_with_the_templates_system_prompt(tokenizer):
    fmt = build_turn_format(read_section(base_config(), "chat"), tokenizer, 2)
    assert isinstance(fmt, ChatTemplateFormat)
    assert fmt.first("q").startswith("<|im_start|>system\nYou are a helpful assistant.")


def test_one_prompt_per_agent(tokenizer):
    formats = build_turn_format(ChatSection(("helper says", "main says")), tokenizer, 2)
    assert [f.first("q").split("\n")[1] for f in formats] == ["helper says<|im_end|>",
                                                             "main says<|im_end|>"]
    shared = build_turn_format(ChatSection(("everyone",)), tokenizer, 2)
    assert "everyone" in shared.first("q")


def test_errors_name_the_field(tokenizer):
    with pytest.raises(ValueError, match="config.chat.system_prompts: 3 prompts for 2"):
        build_turn_format(ChatSection(("a", "b", "c")), tokenizer, 2)
    with pytest.raises(ValueError, match="config.chat.system_prompts: .*no chat template"):
        build_turn_format(ChatSection(("a",)), ByteTokenizer(), 1)
    assert isinstance(build_turn_format(ChatSection(), ByteTokenizer(), 1), PlainFormat)
    c = base_config()
    c.chat.system_prompts = (3,)
    with pytest.raises(ValueError, match="config.chat"):
        read_section(c, "chat")
