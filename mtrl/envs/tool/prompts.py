"""The tool environment's texts: first prompts per task kind and observations."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class ToolTemplates:
    math: str = ("Solve the problem. You may run Python: write a ```python block and its "
                 "printed output comes back. Give the final answer as \\boxed{{n}}.\n\n"
                 "Question: {question}")
    code: str = ("Write the Python function `{entry_point}`. You may run Python to test it: "
                 "write a ```python block and its printed output comes back. When it is "
                 "ready, submit it: repeat the function in a ```python block and write "
                 "\\boxed{{submit}} after it.\n\n{prompt}")
    output: str = "Output:\n{output}"
    no_output: str = "The code ran and printed nothing."
    error: str = "Error: {error}"
    truncated: str = "[output truncated: {shown} of {total} characters shown]"
    # Used as written (no fields to fill): single braces.
    invalid: str = ("The ```python block is not closed with ```; nothing ran. Close the "
                    "block, or give the final answer as \\boxed{}.")
    void: str = ("No ```python block and no final answer found. Write a ```python block "
                 "to run code, or give the final answer as \\boxed{}.")
    ended: str = "The episode is over."
    no_program: str = "The submission has no code: nothing to test."
