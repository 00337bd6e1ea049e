"""An expert backed by a model in this process (e.g. an mtrl sampler).

The model is any callable `generate(prompts: list[str]) -> list[str]` returning one
completion per prompt. `sampler_generate` builds that callable from an mtrl
Transformer, its tokenizer and the mtrl Sampler (prompt formatting as in training,
sampling, decoding); `LocalModelExpert.from_model` wraps it. All requests of a step
go to the model in one call. Like every expert, it never raises on a failed or
malformed generation: those requests get "" (no suggestion) and a logged warning.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Sequence

from mtrl.envs.code.experts.base import (EXPERT_SYSTEM_PROMPT, Expert, ExpertRequest,
                                         build_expert_prompt)
from mtrl.envs.code.extraction import decode_completion
from mtrl.envs.code.task import CodeTask

if TYPE_CHECKING:  # jax and the model stack load only when a model expert is built
    from mtrl.sampling import SamplingConfig
    from mtrl.tokenizers import Tokenizer

Generate = Callable[[list[str]], list[str]]
logger = logging.getLogger(__name__)


def sampler_generate(model: Any, tokenizer: "Tokenizer", *,
                     sampling: "SamplingConfig | None" = None, max_new_tokens: int = 256,
                     seed: int = 0) -> Generate:
    """generate(prompts) -> completions from an mtrl model through the mtrl Sampler.

    model: an mtrl.models.Transformer (its current weights are captured; a later
    `Sampler.set_state` is the way to swap them). Each prompt is rendered as a
    first turn the way training renders it (the tokenizer's chat template when it has
    one, else PlainFormat), encoded, and cut from the left to fit the model's context
    with room for the answer. sampling: None is greedy decoding (deterministic, so the
    same prompt gets the same suggestion) with `max_new_tokens`; a given config is
    used as is. The tokenizer's end-of-sequence id always stops a row. Non-greedy
    calls draw from `seed` folded with a call counter, so calls differ but a run
    repeats.
    """
    import jax

    from mtrl.rollout import ChatTemplateFormat, PlainFormat
    from mtrl.sampling import Sampler, SamplingConfig

    if sampling is None:
        sampling = SamplingConfig(greedy=True, max_new_tokens=max_new_tokens,
                                  stop_token_ids=(tokenizer.eos_id,), pad_id=tokenizer.pad_id)
    fmt = (ChatTemplateFormat.from_tokenizer(tokenizer, tokenizer.eos_text)
           if tokenizer.has_chat_template else PlainFormat())
    sampler = Sampler(model)
    max_prompt = max(1, model.config.max_position_embeddings - sampling.max_new_tokens)
    base_key = jax.random.key(seed)
    calls = [0]

    def generate(prompts: list[str]) -> list[str]:
        encoded = [tokenizer.encode(fmt.first(prompt))[-max_prompt:] or [tokenizer.pad_id]
                   for prompt in prompts]
        key = jax.random.fold_in(base_key, calls[0])
        calls[0] += 1
        generation = sampler.generate(encoded, key, sampling,
                                      stop_tokens=[[tokenizer.eos_id]] * len(encoded))
        return [tokenizer.decode(ids) for ids in generation.output.to_lists()]

    return generate


class LocalModelExpert(Expert):
    def __init__(self, generate: Generate, *, system_prompt: str = EXPERT_SYSTEM_PROMPT,
                 max_suggestion_chars: int = 4000):
        if not callable(generate):
            raise TypeError("LocalModelExpert needs a callable generate(prompts) -> completions")
        if max_suggestion_chars < 1:
            raise ValueError("max_suggestion_chars must be positive")
        self._generate = generate
        self.system_prompt = system_prompt
        self.max_suggestion_chars = max_suggestion_chars

    @classmethod
    def from_model(cls, model: Any, tokenizer: "Tokenizer", *,
                   sampling: "SamplingConfig | None" = None, max_new_tokens: int = 256,
                   seed: int = 0, **options: Any) -> "LocalModelExpert":
        """An expert answering with an mtrl model (`sampler_generate`; greedy unless
        `sampling` says otherwise). options: system_prompt, max_suggestion_chars."""
        return cls(sampler_generate(model, tokenizer, sampling=sampling,
                                    max_new_tokens=max_new_tokens, seed=seed), **options)

    def prompt(self, request: ExpertRequest) -> str:
        user = build_expert_prompt(request.task, request.program_code, request.feedback_text)
        return f"{self.system_prompt}\n\n{user}" if self.system_prompt else user

    def suggest(self, task: CodeTask, program_code: str, feedback_text: str, *,
                all_passed: bool | None = None) -> str:
        return self.suggest_batch([ExpertRequest(task, program_code, feedback_text,
                                                 all_passed)])[0]

    def suggest_batch(self, requests: Sequence[ExpertRequest]) -> list[str]:
        """One suggestion per request; "" for every request when the model call fails
        or answers with the wrong number of completions (which one belongs to which
        request is then unknown), and for each completion that is not text."""
        if not requests:
            return []
        try:
            completions = list(self._generate([self.prompt(request) for request in requests]))
        except Exception as error:  # the model backend's failure must not end the step
            logger.warning("local expert model failed (%s: %s); using no suggestion for "
                           "%d requests", type(error).__name__, error, len(requests))
            return [""] * len(requests)
        if len(completions) != len(requests):
            logger.warning("local expert model returned %d completions for %d prompts; "
                           "using no suggestion", len(completions), len(requests))
            return [""] * len(requests)
        return [self._clean(text) for text in completions]

    def _clean(self, text: Any) -> str:
        try:
            return decode_completion(text, self.max_suggestion_chars).strip()
        except TypeError as error:
            logger.warning("local expert model returned a %s, not text (%s); using no "
                           "suggestion", type(text).__name__, error)
            return ""
