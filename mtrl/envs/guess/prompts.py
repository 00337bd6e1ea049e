"""The guessing environment's texts, and how a reply is read as a guess.

A reply is read like the math environment reads an answer (mtrl/envs/math/answer.py:
the last \\boxed{}, else `####`, else the last number, normalised); a guess is that
answer when it is an integer. Every observation after a wrong guess is a verdict
followed by the task's own question, as the math environment's "direction" feedback
repeats its question: the verdict is what the next turn needs and the first prompt
lacks, and the question makes every observation its task's own. No text names the
secret: the question shows the two exclusive bounds, a verdict the wrong guess.
"""

from __future__ import annotations

import dataclasses

from mtrl.envs.math.answer import extract_answer


@dataclasses.dataclass(frozen=True)
class GuessTemplates:
    """Texts; "{low}", "{high}", "{guess}", "{question}" are filled in."""

    question: str = "Guess my secret integer. It is greater than {low} and less than {high}."
    low: str = "{guess} is too low. {question}"
    high: str = "{guess} is too high. {question}"
    outside: str = "{guess} is out of range. {question}"
    none: str = "No integer was found in your answer. {question}"
    solved: str = "Correct."


def read_guess(text: str) -> int | None:
    """The integer a reply guesses (module docstring), or None (no number, or a
    number that is not an integer: "2.5", "1/3")."""
    answer = extract_answer(text)
    if answer is None or "." in answer or "/" in answer:
        return None
    return int(answer)


def feedback(templates: GuessTemplates, low: int, high: int, secret: int,
             guess: int | None) -> str:
    """The observation after `guess` on the task (low, high, secret): solved, no
    integer, out of range (at or past a bound), too low or too high. Takes the task's
    numbers, not the task, since the task module renders its prompt with these
    templates."""
    question = templates.question.format(low=low, high=high)
    if guess is None:
        return templates.none.format(question=question)
    if guess == secret:
        return templates.solved
    if not low < guess < high:
        return templates.outside.format(guess=guess, question=question)
    side = templates.low if guess < secret else templates.high
    return side.format(guess=guess, question=question)
