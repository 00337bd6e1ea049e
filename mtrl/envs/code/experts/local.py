"""An expert backed by a model in this process (e.g. an mtrl sampler).

The model is any callable `generate(prompts: list[str]) -> list[str]` returning one
completion per prompt, so the sampler plugs in through a thin adapter that applies
its tokenizer's chat template, samples and decodes. All requests of a step go to the
model in one call.
"""

from __future__ import annotations

from typing import Callable, Sequence

from mtrl.envs.code.experts.base import (EXPERT_SYSTEM_PROMPT, Expert, ExpertRequest,
                                         build_expert_prompt)
from mtrl.envs.code.extraction import decode_completion
from mtrl.envs.code.task import CodeTask

Generate = Callable[[list[str]], list[str]]


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

    def prompt(self, request: ExpertRequest) -> str:
        user = build_expert_prompt(request.task, request.program_code, request.feedback_text)
        return f"{self.system_prompt}\n\n{user}" if self.system_prompt else user

    def suggest(self, task: CodeTask, program_code: str, feedback_text: str, *,
                all_passed: bool | None = None) -> str:
        return self.suggest_batch([ExpertRequest(task, program_code, feedback_text,
                                                 all_passed)])[0]

    def suggest_batch(self, requests: Sequence[ExpertRequest]) -> list[str]:
        if not requests:
            return []
        completions = self._generate([self.prompt(request) for request in requests])
        if len(completions) != len(requests):
            raise ValueError(f"generate returned {len(completions)} completions for "
                             f"{len(requests)} prompts")
        return [decode_completion(text, self.max_suggestion_chars).strip()
                for text in completions]
