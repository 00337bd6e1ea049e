"""A small ChatML tokenizer shaped like SmolLM2-Instruct's (built locally, no download):
byte-level BPE, `<|im_end|>` is the eos (the end-of-turn token the sampler stops on),
and the template inserts a default system prompt when the conversation has none."""

import transformers
from tokenizers import Tokenizer as RustTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers

# SmolLM2-135M-Instruct's template, with a shorter default system prompt.
SMOL_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
# A template that re-renders earlier assistant turns: it drops their <think> blocks
# (as Qwen3's does), so the whole-conversation rendering differs from the history.
THINK_STRIP_TEMPLATE = (
    "{% for message in messages %}{% set content = message['content'] %}"
    "{% if message['role'] == 'assistant' and '</think>' in content %}"
    "{% set content = content.split('</think>')[-1].lstrip('\n') %}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + content + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = ["def add(a, b):\n    return a + b\n", "the quick brown fox jumps over the lazy dog",
          "Tests: 1/2 passed. Revise your function.", "```python\nprint(1)\n```",
          "<think>so</think> Here is the code", "assert add(1, 2) == 3"] * 5


def build_chatml_tokenizer(chat_template: str = SMOL_TEMPLATE):
    """Byte-level BPE trained on a few strings, eos = <|im_end|>, ChatML template."""
    rust = RustTokenizer(models.BPE())
    rust.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    rust.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=500, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    rust.train_from_iterator(CORPUS, trainer=trainer)
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=rust, bos_token="<|im_start|>", eos_token="<|im_end|>",
        pad_token="<|im_end|>", unk_token="<|endoftext|>", chat_template=chat_template)
