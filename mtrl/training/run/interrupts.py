"""Ctrl-C and SIGTERM stop a run at a safe point, not in the middle of XLA.

Python's default SIGINT handler raises KeyboardInterrupt wherever the main thread
happens to be: inside JAX dispatch or compilation that is a 30-line traceback, and
inside a checkpoint save it would be a save cut short. Here the first SIGINT or
SIGTERM only records a request; the trainer polls `stop_point(where)` at safe points
(after an SFT update, after an RL step and its checkpoint), saves what it has there
and raises `Interrupted`, which the launcher prints as one line and exits 128 + the
signal number (130 for SIGINT, 143 for SIGTERM).

A second signal exits at once (os._exit). That is safe for the checkpoints: orbax
writes a step into a temporary directory and renames it when complete
(checkpointing.py), config.json and the logs are replaced atomically or cut back on
resume, so an exit at any instant leaves only whole checkpoints. "At once" must hold
while the main thread is inside a long C call (an XLA compile), where Python signal
handlers do not run: the C-level handler writes the signal number to a wakeup pipe
(signal.set_wakeup_fd) and a watcher thread reading it acts immediately.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(Exception):
    """Raised at a safe point after a stop was requested; `where` says where the run
    stopped (e.g. "RL step 12"), `signum` which signal asked."""

    def __init__(self, where: str, signum: int):
        super().__init__(where)
        self.where = where
        self.signum = signum

    def line(self) -> str:
        return f"interrupted at {self.where}; run the same command to resume"

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _StopRequest:
    def __init__(self):
        self.signum: int | None = None
        self.installed = False

    def install(self) -> None:
        """Takes over SIGINT and SIGTERM for this process (main thread only)."""
        if self.installed:
            return
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        for signum in SIGNALS:
            signal.signal(signum, self._handler)
        signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        threading.Thread(target=self._watch, args=(read_fd,), name="mtrl-signals",
                         daemon=True).start()
        self.installed = True

    def _handler(self, signum, frame) -> None:
        # The watcher thread counts the signals (it may see this one before or after
        # this handler runs); here only a stop is recorded, in case it has not yet.
        del frame
        if self.signum is None:
            self.signum = signum

    def _watch(self, read_fd: int) -> None:
        seen = 0
        while True:
            data = os.read(read_fd, 64)
            for signum in data:
                if signum not in SIGNALS:
                    continue
                seen += 1
                if seen == 1:
                    self.signum = self.signum or signum
                    print(f"{signal.Signals(signum).name}: stopping at the next safe point "
                          "(press Ctrl-C again to exit at once)", file=sys.stderr, flush=True)
                else:
                    print("exiting at once; the last whole checkpoint is kept",
                          file=sys.stderr, flush=True)
                    os._exit(128 + signum)


_STOP = _StopRequest()


def install() -> None:
    """Called by the launcher before any work; without it stop_point never raises."""
    _STOP.install()


def stop_requested() -> bool:
    return _STOP.signum is not None


def stop_point(where: str) -> None:
    """Raises Interrupted(where) if a stop was requested; call where stopping loses
    nothing (after saving what the run has)."""
    if _STOP.signum is not None:
        raise Interrupted(where, _STOP.signum)
