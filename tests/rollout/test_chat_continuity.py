"""Chat-template multi-turn histories: token continuity through the tree generator and
equality with the template applied to the whole conversation (one and two agents,
per-agent system prompts), on a SmolLM2-shaped ChatML tokenizer built locally."""

import jax
import numpy as np
import pytest

from mtrl.rollout.environment import Environment, StepResult
from mtrl.rollout import ChatTemplateFormat, RolloutConfig
from mtrl.rollout.backend import Contexts, PolicyBackend, Samples
from mtrl.rollout.generator import rollout
from mtrl.tokenizers import HFTokenizer
from tests.tokenizers.chatml import THINK_STRIP_TEMPLATE, build_chatml_tokenizer

ANSWERS = ["Here is the code\n```python\ndef add(a, b):\n    return a + b\n```",
           "<think>so</think>\nthe quick fox", "assert add(1, 2) == 3"]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    directory = tmp_path_factory.mktemp("chatml")
    build_chatml_tokenizer().save_pretrained(directory)
    return HFTokenizer.from_pretrained(directory)


class TextBackend(PolicyBackend):
    """Samples are encoded answer texts ending with the eos (the end-of-turn token);
    sample g of a row whose index is odd is cut before its stop token."""

    def __init__(self, tokenizer):
        self.tok = tokenizer

    def begin(self, agent, prompts):
        return Contexts(tokens=[list(p) for p in prompts])

    def generate(self, agent, contexts, num_samples, max_new_tokens, key):
        tokens, histories = [], []
        for i, row in enumerate(contexts.tokens):
            for g in range(num_samples):
                text = ANSWERS[(agent + len(row) + g) % len(ANSWERS)]
                comp = self.tok.encode(text) + ([] if (i + g) % 3 == 2 else [self.tok.eos_id])
                tokens.append(comp)
                histories.append(row + comp)
        return (Samples(tokens=tokens, logprobs=[np.zeros(len(t), np.float32) for t in tokens]),
                Contexts(tokens=histories))

    def extend(self, agent, contexts, rows, new_tokens):
        return Contexts(tokens=[contexts.tokens[r] + list(t) for r, t in zip(rows, new_tokens)])


class FeedbackEnv(Environment):
    """Never done; the observation names the turn and the agent."""

    def __init__(self, num_agents):
        self.num_agents = num_agents

    def reset(self, task):
        return task, tuple(f"Write add for task {task} (agent {a})."
                           for a in range(self.num_agents))

    def step(self, states, actions, turn):
        return [StepResult(reward=0.0, done=False, state=s,
                           observations=tuple(f"Tests: 1/2 passed (turn {turn}, agent {a})."
                                              for a in range(self.num_agents)))
                for s in states]


def grow(tokenizer, num_agents, systems, num_turns=3):
    formats = tuple(ChatTemplateFormat.from_tokenizer(tokenizer, system=s) for s in systems)
    config = RolloutConfig(num_agents=num_agents, num_turns=num_turns, num_generations=2,
                           max_new_tokens=64, max_context=4096)
    return formats, rollout([0, 1], FeedbackEnv(num_agents), TextBackend(tokenizer), tokenizer,
                            config, jax.random.key(0), formats)


@pytest.mark.parametrize("systems", [(None,), ("You write Python.",),
                                     ("You are the helper.", "You are the main agent.")],
                         ids=["one-default-system", "one-system", "two-agents"])
def test_next_context_is_context_plus_sample_plus_delta(tokenizer, systems):
    formats, tree = grow(tokenizer, len(systems), systems)
    assert len(tree.turns) == 3
    j_count = tree.joint_index.shape[0]
    for prev, cur in zip(tree.turns[:-1], tree.turns[1:]):
        for a, fmt in enumerate(formats):
            g = 2
            for child, ctx in enumerate(cur.contexts[a]):
                parent, j = divmod(child, j_count)
                row = parent * g + int(tree.joint_index[j, a])
                sample = prev.completions[a][row]
                stopped = bool(sample) and sample[-1] == tokenizer.eos_id
                obs = prev.observations[a][parent * j_count + j]
                delta = tokenizer.encode(fmt.next(obs, stopped))
                assert ctx == prev.contexts[a][parent] + sample + delta
                # Exactly one end-of-turn token closes every assistant turn.
                text = tokenizer.hf_tokenizer.decode(ctx)
                assert "<|im_end|><|im_end|>" not in text
                assert text.count("<|im_end|>") == text.count("<|im_start|>") - 1


@pytest.mark.parametrize("systems", [(None,), ("You are the helper.", "You are the main agent.")],
                         ids=["one", "two-agents"])
def test_history_equals_template_of_whole_conversation(tokenizer, systems):
    formats, tree = grow(tokenizer, len(systems), systems)
    last = tree.turns[-1]
    j_count = tree.joint_index.shape[0]
    hf = tokenizer.hf_tokenizer
    for a, system in enumerate(systems):
        for leaf, ctx in enumerate(last.contexts[a]):
            # Walk back up the tree to collect this branch's conversation.
            messages, node = [], leaf
            for prev in reversed(tree.turns[:-1]):
                parent, j = divmod(node, j_count)
                row = parent * 2 + int(tree.joint_index[j, a])
                answer = tokenizer.decode(prev.completions[a][row])
                messages[:0] = [{"role": "assistant", "content": answer},
                                {"role": "user", "content":
                                 prev.observations[a][parent * j_count + j]}]
                node = parent
            task = [0, 1][node]
            messages.insert(0, {"role": "user", "content": f"Write add for task {task} (agent {a})."})
            if system is not None:
                messages.insert(0, {"role": "system", "content": system})
            whole = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            assert ctx == tokenizer.encode(whole)


def test_template_that_rerenders_earlier_turns_differs_as_documented(tmp_path):
    """A template that drops earlier <think> blocks renders the conversation without
    them; the history keeps the sampled tokens verbatim (what was trained on), so the
    two differ by exactly the thinking block."""
    build_chatml_tokenizer(THINK_STRIP_TEMPLATE).save_pretrained(tmp_path)
    tok = HFTokenizer.from_pretrained(tmp_path)
    fmt = ChatTemplateFormat.from_tokenizer(tok)
    answer = "<think>so</think>\nthe quick fox"
    history = (tok.encode(fmt.first("q")) + tok.encode(answer) + [tok.eos_id]
               + tok.encode(fmt.next("again", True)))
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": answer},
                {"role": "user", "content": "again"}]
    whole = tok.apply_chat_template(messages)
    assert tok.hf_tokenizer.decode(history) != whole
    assert tok.hf_tokenizer.decode(history) == whole.replace("the quick fox",
                                                             "<think>so</think>\nthe quick fox")


def test_default_stop_text_is_eos_and_is_not_doubled(tokenizer):
    fmt = ChatTemplateFormat.from_tokenizer(tokenizer)
    assert fmt.strip_prefix == "<|im_end|>"
    assert not fmt.next("x", True).startswith("<|im_end|>")
    assert fmt.next("x", False).startswith("<|im_end|>")
