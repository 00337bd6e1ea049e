"""Experts for the `expert_edits` feedback mode: one interface, three backends."""

from mtrl.envs.code.experts.base import (EXPERT_SYSTEM_PROMPT, Expert, ExpertRequest,
                                         build_expert_prompt)
from mtrl.envs.code.experts.local import Generate, LocalModelExpert, sampler_generate
from mtrl.envs.code.experts.openai_compat import OpenAICompatibleExpert, OpenAIExpertConfig
from mtrl.envs.code.experts.reference import LOOKS_CORRECT, ReferenceExpert

__all__ = [
    "EXPERT_SYSTEM_PROMPT",
    "Expert",
    "ExpertRequest",
    "Generate",
    "LOOKS_CORRECT",
    "LocalModelExpert",
    "OpenAICompatibleExpert",
    "OpenAIExpertConfig",
    "ReferenceExpert",
    "build_expert_prompt",
    "sampler_generate",
]
