"""An episode of an external environment: the arguments its server's reset takes."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class EpisodeTask:
    """task_id: stable identifier ("seed/12", "train/3"). reset: the reset message's
    data, as sorted (name, value) pairs (hashable; `reset_kwargs` gives the dict). The
    server must play the same episode for the same reset and actions (the adapter
    replays episodes to branch them: env.py).

    `prompt`: the reset observation as the agent read it, once the environment has
    reset the task ("" before; transcripts print it). It is not a field: equal tasks
    are the same task whether or not they were shown yet."""

    task_id: str
    reset: tuple[tuple[str, object], ...]

    @property
    def reset_kwargs(self) -> dict:
        return dict(self.reset)

    @property
    def prompt(self) -> str:
        return self.__dict__.get("_shown", "")

    def show(self, text: str) -> None:
        """Records the reset observation (the same for every reset: env.py replays)."""
        object.__setattr__(self, "_shown", text)
