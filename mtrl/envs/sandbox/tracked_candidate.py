"""A candidate process as its sandbox slot tracks it (slot.py): its pid, the slot's end
of its bootstrap socket, its working directory and uid."""

from __future__ import annotations

import dataclasses
import os

from mtrl.envs.sandbox import lifecycle


@dataclasses.dataclass
class Candidate:
    """An isolated candidate process as the slot tracks it."""

    pid: int
    # The slot's end of the candidate's bootstrap socket: the program goes out on
    # it, one byte comes back once the candidate's set-up is done (before any of
    # its code runs); closed when the candidate has ended.
    bootstrap_fd: int
    workdir: str
    uid: int | None
    max_processes: int = 0
    setup_failed: bool = False  # it was gone before its program reached it

    def set_up(self) -> bool:
        """Whether the candidate said its set-up was done: only
        then is an exit with lifecycle.SETUP_FAILED_EXIT its own doing."""
        try:
            os.set_blocking(self.bootstrap_fd, False)
            return os.read(self.bootstrap_fd, 1) == lifecycle.SET_UP
        except OSError:
            return False

    def close(self) -> None:
        if self.bootstrap_fd >= 0:
            os.close(self.bootstrap_fd)
            self.bootstrap_fd = -1
