"""`env.expert` from the config: which expert the `expert_edits` feedback mode asks.

  reference  offline edits toward the task's canonical solution (ReferenceExpert), for
             the train tasks only (`train_tasks`): validation and test tasks get no
             suggestion, so no evaluation feedback carries a solution; options:
             max_edits, max_lines_per_edit.
  openai     an OpenAI-compatible chat endpoint (OpenAICompatibleExpert); options are
             OpenAIExpertConfig's fields: base_url, model, api_key_env (the variable's
             name, never the key), timeout_s, max_retries, cache_path, ...
  local      a model on this machine from a Hugging Face checkpoint directory, e.g. an
             mtrl run's export (workdir/export/agent0); options: path, max_new_tokens,
             seed; the run's tokenizer is used.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

from mtrl.envs.code.experts.base import Expert
from mtrl.envs.code.experts.openai_compat import OpenAICompatibleExpert, OpenAIExpertConfig
from mtrl.envs.code.experts.reference import ReferenceExpert
from mtrl.registry import Registry

EXPERTS: Registry[Callable[..., Expert]] = Registry("expert")


# Builders: (tokenizer, train_tasks, **options) -> Expert. Model experts see the task
# prompt, the program and diagnostics (experts/base.py), never a solution.
@EXPERTS.register("reference")
def reference_expert(tokenizer=None, train_tasks: Sequence = (), **options: Any) -> Expert:
    return ReferenceExpert(tasks=train_tasks, **options)


@EXPERTS.register("openai")
def openai_expert(tokenizer=None, train_tasks: Sequence = (), **options: Any) -> Expert:
    return OpenAICompatibleExpert(OpenAIExpertConfig(**options))


@EXPERTS.register("local")
def local_expert(tokenizer=None, train_tasks: Sequence = (), *, path: str = "",
                 **options: Any) -> Expert:
    from mtrl.envs.code.experts.local import LocalModelExpert
    from mtrl.models import load_hf_checkpoint
    if not path or not os.path.isdir(os.path.expanduser(path)):
        raise ValueError(f"local expert: options.path must be a checkpoint directory, "
                         f"got {path!r}")
    if tokenizer is None:
        raise ValueError("local expert: needs the run's tokenizer")
    model = load_hf_checkpoint(os.path.expanduser(path))
    return LocalModelExpert.from_model(model, tokenizer, **options)


def build_expert(kind: str, options: dict, tokenizer=None, train_tasks: Sequence = ()
                 ) -> Expert | None:
    """The configured expert, or None for kind "" (one-line errors naming the field).
    train_tasks: the only tasks whose solutions an expert may read (the train split)."""
    if not kind:
        if options:
            raise ValueError("config.env.expert_options: set, but env.expert is ''")
        return None
    if kind not in EXPERTS:
        raise ValueError(f"config.env.expert: unknown {kind!r}; valid: "
                         f"{', '.join(EXPERTS.names())} (or '' for none)")
    try:
        if "tasks" in options or "train_tasks" in options:
            raise ValueError("the tasks an expert may read are the run's train split; "
                             "they are not an option")
        return EXPERTS.get(kind)(tokenizer, tuple(train_tasks), **options)
    except (TypeError, ValueError) as e:
        raise ValueError(f"config.env.expert_options: {' '.join(str(e).split())}") from None
