"""The math environment's texts: first prompts and the three feedback modes.

Feedback modes (`MathEnvConfig.feedback_mode`):
  unary        UFO's fixed message after a wrong answer ("Try again."): one bit, no
               hint of what was wrong (Liu et al. 2025, "A Simple 'Try Again' ...").
  correctness  "Incorrect." plus the answer the environment extracted (so a model
               learns how its answer was read); with several agents, their answers.
  plain        an instruction to revise, no diagnostics.
  direction    "<answer> is too high." or "too low." (or "no number found"), then the
               question again: the side of the truth the answer missed, a verifier's
               message a model can use at turn 2 (the guessing-game signal); the
               question in it makes every observation the task's own.
"""

from __future__ import annotations

import dataclasses
import fractions

from mtrl.registry import Registry


@dataclasses.dataclass(frozen=True)
class MathTemplates:
    """Prompt texts; "{question}", "{agent}", "{num_agents}" are filled in."""

    first: str = ("Solve the problem. Give the final answer as \\boxed{{n}}.\n\n"
                  "Question: {question}")
    team: str = ("You are agent {agent} of {num_agents}; the team's answer is the "
                 "majority of your final answers.\n")
    try_again: str = "Try again."
    incorrect: str = "Incorrect. Your final answer was read as {answer}."
    # Used as written (no fields to fill): single braces.
    no_answer: str = "Incorrect. No final answer was found; give it as \\boxed{n}."
    revise: str = "Review your solution and give the final answer again as \\boxed{n}."
    teammates: str = "Your teammates answered: {answers}."
    solved: str = "Correct. The problem is solved."
    # feedback_mode "direction": {side} is "high" or "low".
    direction: str = "{answer} is too {side}. {question}"
    direction_none: str = "No number was found in your answer. {question}"
    # history_mode "last": a fresh prompt holding the question, the previous
    # response and the feedback.
    last: str = "{first}\n\nYour previous response:\n{response}\n\n{feedback}"


@dataclasses.dataclass(frozen=True)
class FeedbackInput:
    """What a feedback mode may look at for one agent of one branch."""

    agent: int  # 0-based
    answers: tuple[str | None, ...]  # every agent's extracted answer
    correct: bool  # the team's answer matched
    templates: MathTemplates
    truth: str = ""  # the normalised ground truth (direction)
    question: str = ""  # the task's question (direction)


MATH_FEEDBACK: Registry = Registry("math feedback mode")


@MATH_FEEDBACK.register("unary")
def unary_feedback(x: FeedbackInput) -> str:
    return x.templates.try_again


@MATH_FEEDBACK.register("correctness")
def correctness_feedback(x: FeedbackInput) -> str:
    own = x.answers[x.agent]
    text = (x.templates.no_answer if own is None
            else x.templates.incorrect.format(answer=own))
    others = [f"agent {a + 1}: {ans if ans is not None else 'none'}"
              for a, ans in enumerate(x.answers) if a != x.agent]
    if others:
        text += " " + x.templates.teammates.format(answers="; ".join(others))
    return text


@MATH_FEEDBACK.register("direction")
def direction_feedback(x: FeedbackInput) -> str:
    """Which side of the truth the agent's own answer lies on, and the question."""
    own = x.answers[x.agent]
    if own is None:
        return x.templates.direction_none.format(question=x.question)
    side = "high" if fractions.Fraction(own) > fractions.Fraction(x.truth) else "low"
    return x.templates.direction.format(answer=own, side=side, question=x.question)


@MATH_FEEDBACK.register("plain")
def plain_feedback(x: FeedbackInput) -> str:
    return x.templates.revise


def first_prompt(templates: MathTemplates, question: str, agent: int, num_agents: int) -> str:
    team = (templates.team.format(agent=agent + 1, num_agents=num_agents)
            if num_agents > 1 else "")
    return team + templates.first.format(question=question)
