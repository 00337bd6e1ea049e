"""Counting traces of jitted functions, to prove that a call did not recompile.

`jax.jit` traces (and then compiles) a function once per new combination of input
shapes, dtypes and static arguments; later calls with the same signature reuse the
compiled program without running the Python body. A counter bumped inside the body
therefore counts compilations of that function exactly (docs/design.md section 6, rule 7).
"""

from __future__ import annotations

import collections
import functools
from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)


class TraceCounter:
    """Per-name counts of how often wrapped functions were traced."""

    def __init__(self):
        self._counts: collections.Counter[str] = collections.Counter()

    def wrap(self, name: str, fn: F) -> F:
        """`fn` with a side effect at trace time: counts[name] += 1. Jit the result."""

        @functools.wraps(fn)
        def counted(*args, **kwargs):
            self._counts[name] += 1
            return fn(*args, **kwargs)

        return counted  # type: ignore[return-value]

    def count(self, name: str) -> int:
        return self._counts[name]

    @property
    def total(self) -> int:
        return sum(self._counts.values())

    def as_dict(self) -> dict[str, int]:
        return dict(self._counts)
