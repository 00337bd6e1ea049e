"""SFT demonstrations for the synthetic family: first-turn answers and revisions.

A demonstration is a task plus one completion per agent, in exactly the format an
agent is expected to output (a bare tiny program). The prompt is not part of it:
the trainer renders each agent's prompt through the environment (`env.reset(task)`),
so role instructions live in one place.

One agent writes the entry point:      two agents split the work:
                                           agent 1 (helper)   agent 2 (main)
    def f(x):                              def aux(x, k=2):   def f(x, b=7):
        return 2*x+7                           return k*x         y = aux(x)
                                                                  return y+b
Bare definitions (the code environment extracts them; no fence) keep the tiny
model's contexts short. The helper carries the term (the part the feedback
disambiguates; a linear term's coefficient first, as a default argument), the main
function calls it and adds the offset (the part the example shows, as a default
argument right after the prompt that shows it). Main binds aux's result before
using it: the code environment's level reward counts a body that is a single
`return <expr with aux(...)>` as a thin wrapper.

By default the demonstrated answer is the true function, which the one example
does not determine, so a policy fit to them spreads its first guesses over the
members that fit the example (about 1/|terms| turn-1 success). With `first_guess`
the teacher instead always opens with one term, and the revision demonstrations
start from that guess; `mtrl.data.demonstrations` can also make the teacher weak
(resubmitting its guess in a share of revisions), which is how the embedded
default lands in the band where RL has something to add.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from mtrl.data.synthetic.family import IntFunction, consistent_members
from mtrl.data.synthetic.tasks import SyntheticTask
from mtrl.data.synthetic.terms import check_term, get_term
from mtrl.envs.code.analysis import AUX_NAME as HELPER_NAME
from mtrl.envs.code.task import CodeTask


@dataclasses.dataclass(frozen=True)
class Demonstration:
    task: CodeTask
    completions: tuple[str, ...]  # one per agent, agent order

    def __post_init__(self):
        if not self.completions:
            raise ValueError("Demonstration needs at least one completion")


def single_agent_completion(function: IntFunction, entry_point: str) -> str:
    return f"def {entry_point}(x):\n    return {function.expression}\n"


def helper_completion(function: IntFunction) -> str:
    """Agent 1: the term alone, as `aux(x)`. A linear term k*x is written with k as a
    default argument, `def aux(x, k=3):\n    return k*x`, the first thing written: a
    copy of the feedback's failing probe `f(1) - f(0) == 3`, the number just before the
    task that the tiny templates' revision instruction restates."""
    term = get_term(function.term)
    if term.coefficient is not None:
        return f"def {HELPER_NAME}(x, k={term.coefficient}):\n    return k*x\n"
    return f"def {HELPER_NAME}(x):\n    return {term.expression}\n"


def main_completion(function: IntFunction, entry_point: str) -> str:
    """Agent 2: the entry point, adding the offset to the helper's result.

    The offset is a default argument, the first thing written, 13 tokens after the
    prompt's own value (the tiny templates end every prompt, revisions included,
    with the task). The 2-layer `tiny` model learns this copy in ~200 SFT updates
    with Adam's b2 = 0.95; with b2 = 0.999 it stayed at the uniform-guess loss for
    300-400 updates (the second moment, inflated by the first updates, shrinks later
    steps). Binding aux's result first keeps the body more than a thin wrapper of the
    helper (the level reward's bonus)."""
    return (f"def {entry_point}(x, b={function.offset}):\n    y = {HELPER_NAME}(x)\n"
            f"    return y+b\n")


def demonstration(item: SyntheticTask, num_agents: int,
                  first_guess: str | None = None) -> Demonstration:
    """The task's true function, or with `first_guess` (a term name) a first attempt
    whose helper writes that term whatever the task (main still adds the offset)."""
    entry = item.task.entry_point
    if num_agents == 1:
        completions = (single_agent_completion(item.function, entry),)
    elif num_agents == 2:
        helper = (item.function if first_guess is None
                  else dataclasses.replace(item.function, term=first_guess))
        completions = (helper_completion(helper), main_completion(item.function, entry))
    else:
        raise ValueError(f"num_agents must be 1 or 2, got {num_agents}")
    return Demonstration(item.task, completions)


def sft_demonstrations(tasks: Sequence[SyntheticTask], *, fraction: float = 0.5,
                       num_agents: int = 2, seed: int = 0,
                       first_guess: str | None = None) -> tuple[Demonstration, ...]:
    """Demonstrations for a seeded `fraction` of `tasks` (train tasks only), in
    the tasks' order. first_guess: the helper always opens with this term (a teacher
    with one default guess, right on the tasks built on it); None: the true term."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    check_first_guess(first_guess, num_agents)
    leaked = [t.task.task_id for t in tasks if t.split != "train"]
    if leaked:
        raise ValueError(f"demonstrations must come from train tasks, got {leaked[:3]}")
    count = round(fraction * len(tasks))
    chosen = np.random.default_rng([int(seed), 3]).choice(len(tasks), count, replace=False)
    return tuple(demonstration(tasks[int(i)], num_agents, first_guess) for i in sorted(chosen))


def check_first_guess(first_guess: str | None, num_agents: int) -> None:
    """first_guess must be None or a registered term, for two agents (the helper's)."""
    if first_guess is None:
        return
    if num_agents != 2:
        raise ValueError("first_guess is the helper's term: it needs num_agents = 2")
    check_term("first_guess", first_guess)


@dataclasses.dataclass(frozen=True)
class RevisionDemonstration:
    """A wrong first attempt and the correct revision of one task.

    The first attempt is another family member that fits the shown example, so the
    environment's feedback on it (the failing probe test) is exactly what an RL
    branch that guessed that member sees; the revision is the true function."""

    first: Demonstration
    revision: Demonstration


def revision_demonstrations(tasks: Sequence[SyntheticTask], family, *, fraction: float,
                            num_agents: int = 2, seed: int = 0,
                            first_guess: str | None = None
                            ) -> tuple[RevisionDemonstration, ...]:
    """Revisions for a seeded `fraction` of `tasks` (train only) whose example leaves
    more than one member open; the wrong first attempt is drawn uniformly among the
    other members that fit the example or, with `first_guess`, is that term (tasks
    built on it have nothing to revise and are skipped)."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be in [0, 1], got {fraction}")
    check_first_guess(first_guess, num_agents)
    leaked = [t.task.task_id for t in tasks if t.split != "train"]
    if leaked:
        raise ValueError(f"demonstrations must come from train tasks, got {leaked[:3]}")
    rng = np.random.default_rng([int(seed), 5])
    count = round(fraction * len(tasks))
    out = []
    for i in sorted(rng.choice(len(tasks), count, replace=False)):
        item = tasks[int(i)]
        rivals = [m for m in consistent_members(family, item.example_x, item.example_y)
                  if m != item.function]
        if first_guess is not None:
            rivals = [m for m in rivals if m.term == first_guess]
        if not rivals:
            continue
        wrong = rivals[int(rng.integers(len(rivals)))]
        guess = dataclasses.replace(item, function=wrong)
        out.append(RevisionDemonstration(first=demonstration(guess, num_agents),
                                         revision=demonstration(item, num_agents)))
    return tuple(out)
