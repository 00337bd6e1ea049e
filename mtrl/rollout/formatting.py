"""How turn texts become the text that is tokenized into a branch's history.

Histories are append-only: the first prompt is rendered once, and every later turn
appends only the *delta* (the end of the agent's turn, the observation, the cue for
the next answer). Completion tokens are never re-rendered or re-tokenized
(token-in/token-out); only these deltas are encoded.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class PlainFormat:
    """Plain-text turns for tokenizers without a chat template (the byte tokenizer)."""

    answer_cue: str = "\n"  # after a prompt, before the agent answers
    turn_separator: str = "\n\n"  # after the agent's completion, before feedback

    def first(self, prompt: str) -> str:
        return prompt + self.answer_cue

    def next(self, observation: str, completion_stopped: bool = True) -> str:
        del completion_stopped  # no end-of-turn token in plain text
        return self.turn_separator + observation + self.answer_cue


_USER_A, _ASSISTANT_B, _USER_C = "\x01userA\x01", "\x01assistantB\x01", "\x01userC\x01"


@dataclasses.dataclass(frozen=True)
class ChatTemplateFormat:
    """Turns rendered by a tokenizer's chat template.

    The delta for a later turn is cut out of the template's rendering of a
    three-message conversation with sentinel texts: everything after the
    assistant's text (its end-of-turn marker, the next user header, the message,
    the generation prompt). When the agent's completion already ended with the
    end-of-turn token (the usual stop token), `strip_prefix` removes it from the
    delta so it is not written twice.

    `system` (one agent's system prompt) opens every rendering with a system
    message; None leaves the template's own default (SmolLM2's inserts one).
    Earlier turns are never re-rendered, so a template that rewrites past assistant
    messages (e.g. drops their <think> blocks) renders a whole conversation
    differently from the history the policy saw and is trained on
    (tests/rollout/test_chat_continuity.py pins the difference).
    """

    first_template: str  # with "{}" where the prompt goes
    next_template: str  # with "{}" where the observation goes
    strip_prefix: str = ""

    @classmethod
    def from_tokenizer(cls, tokenizer, stop_text: str | None = None,
                       system: str | None = None) -> "ChatTemplateFormat":
        """stop_text: the end-of-turn text the sampler stops on (default: the
        tokenizer's eos_text)."""
        if stop_text is None:
            stop_text = tokenizer.eos_text
        render = tokenizer.apply_chat_template
        opening = [] if system is None else [{"role": "system", "content": system}]
        first = render(opening + [{"role": "user", "content": _USER_A}])
        if first is None:
            raise ValueError("tokenizer has no chat template; use PlainFormat")
        if "{}" in first.replace(_USER_A, ""):
            raise ValueError("the chat template or system prompt contains '{}'")
        full = render(opening + [{"role": "user", "content": _USER_A},
                                 {"role": "assistant", "content": _ASSISTANT_B},
                                 {"role": "user", "content": _USER_C}])
        if _ASSISTANT_B not in full or _USER_C not in full:
            raise ValueError("chat template drops message contents; cannot derive turn deltas")
        tail = full[full.index(_ASSISTANT_B) + len(_ASSISTANT_B):]
        strip = stop_text if stop_text and tail.startswith(stop_text) else ""
        return cls(first_template=first.replace(_USER_A, "{}"),
                   next_template=tail[len(strip):].replace(_USER_C, "{}"),
                   strip_prefix=strip)

    def first(self, prompt: str) -> str:
        return self.first_template.replace("{}", prompt, 1)

    def next(self, observation: str, completion_stopped: bool = True) -> str:
        """The delta after a completion; adds the end-of-turn marker when the
        completion was cut before sampling it."""
        prefix = "" if completion_stopped else self.strip_prefix
        return prefix + self.next_template.replace("{}", observation, 1)
