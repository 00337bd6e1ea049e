"""SFT options shared by every suite's demonstrations: the first phase's row kind.
(Per-agent fractions, `Revision` prompts and the scoring of revision demonstrations
belong to the suites: mtrl/data/demonstrations.py.)

The demonstrations themselves come from the run's task suite
(`suite.demonstrations`, mtrl.data.suite): the prompt is exactly the agent's
observation from the environment, so SFT and RL see identical prompt tokens.
"""

from __future__ import annotations

from mtrl.data.demonstrations import Revision

FIRST_PHASE_KINDS = ("first_turn", "revisions")


def first_phase_kinds(value, num_agents: int) -> tuple[str, ...]:
    """config.sft.first_phase per agent: which demonstrations the first SFT phase
    trains on alone, "first_turn" (answers to the task prompt) or "revisions"."""
    kinds = (value,) if isinstance(value, str) else tuple(value)
    if len(kinds) == 1:  # one kind (or a one-entry list) for every agent
        kinds *= num_agents
    valid = " or ".join(FIRST_PHASE_KINDS)
    if any(k not in FIRST_PHASE_KINDS for k in kinds):
        raise ValueError(f"config.sft.first_phase: each kind must be {valid}, got {value!r}")
    if len(kinds) != num_agents:
        raise ValueError(f"config.sft.first_phase: env.num_agents={num_agents} needs one kind "
                         f"({valid}) for every agent or {num_agents} kinds, got {value!r}")
    return kinds


def rows_of_kind(pairs: list[tuple], kind: str | None) -> list[tuple]:
    """The (prompt, completion) pairs of one kind (None: all of them). "revisions" are
    the later-turn demonstrations that change the previous answer: a weak teacher's
    resubmissions (resubmit_fraction) join only with all rows, so a first phase on
    revisions learns to read the feedback before the teacher's habit dilutes it."""
    if kind is None:
        return list(pairs)
    if kind == "first_turn":
        return [x for x in pairs if not isinstance(x[0], Revision)]
    return [x for x in pairs if isinstance(x[0], Revision) and x[1] != x[0].exchanges[-1][0]]
