"""An episode of an external environment: the arguments its server's reset takes."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class EpisodeTask:
    """task_id: stable identifier ("seed/12"). reset: the reset message's data, as
    sorted (name, value) pairs (hashable; `reset_kwargs` gives the dict). The server
    must play the same episode for the same reset and actions (the adapter replays
    episodes to branch them: env.py)."""

    task_id: str
    reset: tuple[tuple[str, object], ...]

    @property
    def reset_kwargs(self) -> dict:
        return dict(self.reset)
