"""How a run's turns are rendered: the tokenizer's chat template (one format per agent,
each with its own system prompt) or plain text for tokenizers without a template.

config.chat.system_prompts: () leaves the template's default system prompt (SmolLM2's
inserts one; others have none); one string gives every agent that system prompt; one
string per agent gives each its own (e.g. helper and main). The end-of-turn text is
the eos token's own content (Tokenizer.eos_text), the token the sampler stops on.
"""

from __future__ import annotations

import dataclasses

from mtrl.rollout import ChatTemplateFormat, PlainFormat


@dataclasses.dataclass(frozen=True)
class ChatSection:
    """The `chat` section."""

    system_prompts: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "system_prompts", tuple(self.system_prompts))
        for prompt in self.system_prompts:
            if not isinstance(prompt, str):
                raise ValueError(f"system_prompts must be strings, got {prompt!r}")


def build_turn_format(chat: ChatSection, tokenizer, num_agents: int):
    """One format shared by every agent, or a tuple with one per agent."""
    systems = chat.system_prompts
    if systems and len(systems) not in (1, num_agents):
        raise ValueError(f"config.chat.system_prompts: {len(systems)} prompts for "
                         f"{num_agents} agents (give 1 or {num_agents})")
    if not tokenizer.has_chat_template:
        if systems:
            raise ValueError("config.chat.system_prompts: the tokenizer has no chat template")
        return PlainFormat()
    if len(systems) <= 1:
        return ChatTemplateFormat.from_tokenizer(tokenizer, tokenizer.eos_text,
                                                 systems[0] if systems else None)
    return tuple(ChatTemplateFormat.from_tokenizer(tokenizer, tokenizer.eos_text, s)
                 for s in systems)
