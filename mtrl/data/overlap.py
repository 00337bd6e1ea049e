"""Do held-out inputs occur in training? What each agent sees, rendered through the real
environment, compared between splits.

A held-out split measures generalization only if no agent-visible input of it is an
input some agent saw in training: its first-turn prompt, and its turn-2 observation
after any first attempt a policy could be taught to make. `visible_texts` renders them
(env.reset for turn 1; env.step on given first attempts for turn 2, the environment's
own feedback and revision instruction), keyed by agent and turn, each with the task's
right answer for that agent. `overlap` counts the held-out texts that occur verbatim
among training's, and the ones among those whose right answer differs from every
training occurrence's (an input seen with another answer teaches the opposite).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable, Sequence

# (agent, turn) -> {text: set of right answers it was shown with}
Texts = dict[tuple[int, int], dict[str, set]]


@dataclasses.dataclass(frozen=True)
class Overlap:
    """Held-out texts per (agent, turn) and how many occur in training."""

    total: dict[tuple[int, int], int]
    seen: dict[tuple[int, int], int]  # verbatim in training
    seen_other_answer: dict[tuple[int, int], int]  # ... and never with this answer
    examples: tuple[str, ...]  # a few seen texts, for the message

    @property
    def any_seen(self) -> bool:
        return any(self.seen.values())

    def fraction(self) -> float:
        """Seen texts over all held-out texts (every agent and turn)."""
        total = sum(self.total.values())
        return sum(self.seen.values()) / total if total else 0.0


def visible_texts(env, tasks: Sequence, attempts: Callable[[object], Iterable[tuple]] = None,
                  answers: Callable[[object], tuple] = None, batch: int = 64) -> Texts:
    """Every agent's turn-1 prompt of every task and, with `attempts` (task -> joint
    first attempts, one completion per agent), its turn-2 observation after each.
    answers(task) -> the right completion per agent (None: the task's canonical
    solution for every agent)."""
    texts: Texts = {}

    def add(key, text, answer):
        texts.setdefault(key, {}).setdefault(text, set()).add(answer)

    pending = []
    for task in tasks:
        state, prompts = env.reset(task)
        right = answers(task) if answers else (task.canonical_solution,) * len(prompts)
        for agent, prompt in enumerate(prompts):
            add((agent, 1), prompt, right[agent])
        for attempt in (attempts(task) if attempts else ()):
            pending.append((state, tuple(attempt), right))
    for start in range(0, len(pending), batch):
        chunk = pending[start:start + batch]
        results = env.step([s for s, _, _ in chunk], [a for _, a, _ in chunk], 1)
        for (_, _, right), result in zip(chunk, results):
            if result.done:  # a right first attempt has no turn 2
                continue
            for agent, observation in enumerate(result.observations):
                add((agent, 2), observation, right[agent])
    return texts


def overlap(train: Texts, heldout: Texts, num_examples: int = 3) -> Overlap:
    """How many held-out texts occur verbatim in training (module docstring)."""
    total, seen, other, examples = {}, {}, {}, []
    for key, texts in heldout.items():
        known = train.get(key, {})
        total[key] = len(texts)
        hits = [t for t in texts if t in known]
        seen[key] = len(hits)
        other[key] = sum(1 for t in hits if not texts[t] & known[t])
        examples += [f"agent {key[0]} turn {key[1]}: {t!r}" for t in hits[:num_examples]]
    return Overlap(total, seen, other, tuple(examples[:num_examples]))
