"""One agent's next-turn user message from the feedback text, by history mode (the
feedback itself: feedback.py). Code shown again (the agent's previous response, its
teammate's code) has its invisible and reordering characters written out
(visible_text): a bidi override in a comment must not show the teammate another
program than the one that ran."""

from __future__ import annotations

from mtrl.envs.code.analysis import role_function_names
from mtrl.envs.code.prompts import PromptTemplates
from mtrl.envs.code.task import CodeTask
from mtrl.envs.sandbox.visible_text import visible


def compose_observation(*, history_mode: str, task: CodeTask, agent: int, num_agents: int,
                        feedback: str, codes: tuple[str, ...], templates: PromptTemplates,
                        show_teammate_code: bool = False) -> str:
    """One agent's next-turn user message.

    history_mode "full": the agent's own previous response is already in its context
    (its assistant turn), so the observation is the feedback alone (plus, when
    `show_teammate_code`, the teammate's code, which is not in that context).
    history_mode "last": the context is reset, so the observation is a complete
    prompt: the agent's first-turn prompt, its previous code, the teammate's code
    (when asked), then the feedback.
    history_mode "feedback": the context is reset and the observation is the
    feedback alone (plus the teammate's code when asked): a Markov prompt for tasks
    whose feedback and revision instruction say all a revision needs (the tiny
    templates restate the task there). Short contexts, no earlier turn to attend over.
    """
    if history_mode not in ("full", "last", "feedback"):
        raise ValueError(f"history_mode must be 'full', 'last' or 'feedback', "
                         f"got {history_mode!r}")
    if not 0 <= agent < num_agents or len(codes) != num_agents:
        raise ValueError(f"agent {agent} / {len(codes)} codes do not match {num_agents} agents")
    parts = []
    if history_mode == "last":
        parts.append(templates.first_turn(task, num_agents)[agent])
        parts.append(_code_section("Your previous response:", codes[agent]))
    if show_teammate_code and num_agents == 2:
        names = role_function_names(num_agents, task.entry_point)
        other = 1 - agent
        parts.append(_code_section(f"Your teammate's current `{names[other]}` code:",
                                   codes[other]))
    parts.append(feedback)
    return "\n\n".join(parts)


def _code_section(title: str, code: str) -> str:
    if not code.strip():
        return f"{title}\n(no code found)"
    return f"{title}\n```python\n{visible(code)}\n```"
