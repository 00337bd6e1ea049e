"""Plain-text prompt templates for code environments.

Prompts are user messages; the caller applies the tokenizer's chat template when it
has one. Templates are `str.format` strings with the fields named below; the task
text is substituted as a value, so braces inside a task never need escaping.

Fields: {prompt} the task text, {entry_point} the function the tests call, {aux}
the helper's name, {function} the function the addressed agent owns.
"""

from __future__ import annotations

import dataclasses
import string

from mtrl.envs.code.analysis import AUX_NAME, role_function_names
from mtrl.envs.code.task import CodeTask

_ALLOWED_FIELDS = frozenset({"prompt", "entry_point", "aux", "function"})


@dataclasses.dataclass(frozen=True)
class PromptTemplates:
    """First-turn role prompts and the revision instruction that ends each feedback."""

    single: str = (
        "Solve the following problem in Python by implementing the function "
        "`{entry_point}`.\n\n"
        "{prompt}\n\n"
        "Reply with the complete function `{entry_point}` (and any imports it needs) in a "
        "single ```python code block. Do not include tests, example usage or prints.")
    helper: str = (
        "You are agent 1 of a team of two solving the following problem in Python.\n\n"
        "{prompt}\n\n"
        "Your teammate will implement `{entry_point}` and can call a helper function "
        "that you write. Write a helper function named `{aux}` that computes a useful "
        "part of the solution and returns its result. Do not implement `{entry_point}`.\n"
        "Reply with the complete function `{aux}` (and any imports it needs) in a single "
        "```python code block. Do not include tests, example usage or prints.")
    main: str = (
        "You are agent 2 of a team of two solving the following problem in Python.\n\n"
        "{prompt}\n\n"
        "Implement the function `{entry_point}`. Your teammate writes a helper function "
        "`{aux}(...)` that will be defined next to your code; you may call it and use "
        "its return value. Do not define `{aux}` yourself.\n"
        "Reply with the complete function `{entry_point}` (and any imports it needs) in a "
        "single ```python code block. Do not include tests, example usage or prints.")
    revise: str = (
        "Revise your function `{function}` accordingly. Reply with the complete function "
        "in a single ```python code block.")
    # The helper's own revision instruction when two agents work ("": `revise`).
    revise_helper: str = ""

    def __post_init__(self):
        for field in dataclasses.fields(self):
            template = getattr(self, field.name)
            if field.name == "revise_helper" and template == "":
                continue
            if not isinstance(template, str) or not template.strip():
                raise ValueError(f"PromptTemplates.{field.name} must be a non-empty string")
            try:
                names = {name for _, name, _, _ in string.Formatter().parse(template) if name}
            except ValueError as error:
                raise ValueError(f"PromptTemplates.{field.name} is not a valid "
                                 f"format string: {error}") from None
            unknown = names - _ALLOWED_FIELDS
            if unknown:
                raise ValueError(f"PromptTemplates.{field.name} uses unknown fields "
                                 f"{sorted(unknown)}; allowed: {sorted(_ALLOWED_FIELDS)}")

    def first_turn(self, task: CodeTask, num_agents: int) -> tuple[str, ...]:
        """Each agent's first prompt: (single,) or (helper, main)."""
        names = role_function_names(num_agents, task.entry_point)
        templates = (self.single,) if num_agents == 1 else (self.helper, self.main)
        return tuple(self._fill(template, task, name) for template, name in zip(templates, names))

    def revise_instruction(self, task: CodeTask, num_agents: int, agent: int) -> str:
        name = role_function_names(num_agents, task.entry_point)[agent]
        helper = num_agents == 2 and agent == 0
        return self._fill(self.revise_helper if helper and self.revise_helper else self.revise,
                          task, name)

    @staticmethod
    def _fill(template: str, task: CodeTask, function: str) -> str:
        return template.format(prompt=task.prompt.strip(), entry_point=task.entry_point,
                               aux=AUX_NAME, function=function)
