"""A progress display for training: a tqdm bar on a terminal, compact lines elsewhere.

On a TTY the bar shows steps, ETA (tqdm's, from the rate since this process
started, so a resumed run is not credited with the steps before it), and a postfix
with the last held-out success and the step time. CI logs and files are not
TTYs: there a bar would print a carriage-return mess, so `Progress` writes one
compact line at the first update, then at most every `line_interval_s` seconds,
and at the last step:

    train 120/1000 (12.0%) | 1.23 s/step | eta 18m03s | heldout_success 0.250

ETA in line mode = (elapsed since the first step of this process / steps done by
it) x steps left; it includes evaluation time, which the step time excludes.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, TextIO

from mtrl.training.logging.metrics import HELDOUT_SUCCESS, to_float


def format_duration(seconds: float) -> str:
    """4000 -> '1h06m40s', 83 -> '1m23s', 7.2 -> '7s'."""
    if seconds < 0:
        raise ValueError(f"duration must be >= 0, got {seconds}")
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


class Progress:
    """Training progress with ETA, held-out success and step time.

    total: the step the run ends at. initial: the step it starts (or resumes) from.
    enabled: False prints nothing at all. stream: defaults to stderr.
    line_interval_s: spacing of the compact lines when `stream` is not a TTY.
    clock: seconds, monotonic (injectable for tests).
    """

    def __init__(self, total: int, *, initial: int = 0, enabled: bool = True,
                 stream: TextIO | None = None, line_interval_s: float = 30.0,
                 description: str = "train", clock: Callable[[], float] = time.monotonic):
        if total < 1 or not 0 <= initial <= total:
            raise ValueError(f"need total >= 1 and 0 <= initial <= total, got "
                             f"total={total}, initial={initial}")
        if line_interval_s < 0:
            raise ValueError(f"line_interval_s must be >= 0, got {line_interval_s}")
        self.total = total
        self.initial = initial
        self.description = description
        self._stream = sys.stderr if stream is None else stream
        self._interval = line_interval_s
        self._clock = clock
        self._start = clock()
        self._last_line: float | None = None
        self._step = initial
        self._step_time: float | None = None
        self._shown: dict[str, float] = {}  # last known values, kept between evals
        self._note: str | None = None  # this step's note
        self._bar = None
        self.enabled = enabled
        if enabled and self._stream.isatty():
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, initial=initial, desc=description,
                             file=self._stream, dynamic_ncols=True, mininterval=0.5)

    def update(self, step: int, *, step_time_s: float | None = None,
               heldout_success: float | None = None, note: str | None = None,
               **scalars: float | None) -> None:
        """Reports that `step` is done. Values given persist until replaced; a value
        given as None is dropped. `note` is shown for this step only (e.g. "update
        skipped: no informative group", where a reward of 0.000 would mislead)."""
        if not self._step <= step <= self.total:
            raise ValueError(f"step must go forward within [{self._step}, {self.total}], "
                             f"got {step}")
        self._step = step
        if step_time_s is not None:
            self._step_time = to_float("step_time_s", step_time_s)
        if heldout_success is not None:
            self._shown[HELDOUT_SUCCESS] = to_float(HELDOUT_SUCCESS, heldout_success)
        for name, value in scalars.items():
            if value is None:
                self._shown.pop(name, None)
            else:
                self._shown[name] = to_float(name, value)
        self._note = note
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.set_postfix_str(self._postfix(), refresh=False)
            self._bar.update(step - self._bar.n)
            return
        now = self._clock()
        due = self._last_line is None or now - self._last_line >= self._interval
        if due or step == self.total:
            self._stream.write(self.line(now) + "\n")
            self._stream.flush()
            self._last_line = now

    def line(self, now: float | None = None) -> str:
        """The compact one-line status (what non-TTY output prints)."""
        now = self._clock() if now is None else now
        parts = [f"{self.description} {self._step}/{self.total} "
                 f"({100.0 * self._step / self.total:.1f}%)"]
        if self._step_time is not None:
            parts.append(f"{self._step_time:.3g} s/step")
        done = self._step - self.initial
        if self._step == self.total:
            parts.append(f"done in {format_duration(now - self._start)}")
        elif done > 0:
            eta = (now - self._start) / done * (self.total - self._step)
            parts.append(f"eta {format_duration(eta)}")
        else:
            parts.append("eta ?")
        parts.extend(f"{name} {value:.3f}" for name, value in self._shown.items())
        if self._note:
            parts.append(self._note)
        return " | ".join(parts)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _postfix(self) -> str:
        parts = []
        if HELDOUT_SUCCESS in self._shown:
            parts.append(f"success={self._shown[HELDOUT_SUCCESS]:.3f}")
        if self._step_time is not None:
            parts.append(f"{self._step_time:.3g}s/step")
        parts.extend(f"{name}={value:.3g}" for name, value in self._shown.items()
                     if name != HELDOUT_SUCCESS)
        if self._note:
            parts.append(self._note)
        return ", ".join(parts)
