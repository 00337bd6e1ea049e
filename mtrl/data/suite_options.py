"""The checks every suite's `data.options` shares, one line each naming the field and
the suite (a suite's own options, e.g. arith's `kind`, stay with the suite):

    check_known_options(suite, options, valid)      no option the suite does not read
    check_generated_options(suite, data, valid)     a generated suite's: known options,
                                                    no data.path, options.seed an
                                                    int >= 0 where given
"""

from __future__ import annotations

from typing import Mapping, Sequence

from mtrl.data.suite import DataConfig


def check_known_options(suite: str, options: Mapping, valid: Sequence[str]) -> None:
    """Refuses an option outside `valid` (it would be ignored):
    "config.data.options: unknown ['x'] for <suite>; valid: [...]"."""
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(f"config.data.options: unknown {unknown} for {suite}; "
                         f"valid: {list(valid)}")


def check_generated_options(suite: str, data: DataConfig, valid: Sequence[str], *,
                            items: str = "tasks") -> None:
    """The checks of a suite that generates its `items` from a seed (no file): its
    options known (check_known_options), data.path empty, and options.seed, where
    given, an int >= 0 (a bool is not one); the suite reads the values itself."""
    check_known_options(suite, data.options, valid)
    if data.path:
        raise ValueError(f"config.data.path: {suite} {items} are generated; leave it ''")
    seed = data.options.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"config.data.options.seed: an int >= 0 for {suite}, got {seed!r}")
