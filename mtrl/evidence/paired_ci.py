"""The paired difference of two arms over seeds, with a 95% t interval, and the verdict
rule of a reproduction (tools/reproduce.py).

Seeds are the unit of replication: arm A and arm B of seed i share a warm start and
data seed, so d_i = x_B,i − x_A,i removes what the seed does to both. Tasks within one
seed share one training run, so they are not independent draws of the arm's effect;
a bootstrap over tasks would understate the spread between runs. Hence a t interval
over seeds (Student 1908), not a bootstrap over tasks and seeds:

    d̄   = (1/n) Σ_i d_i
    s   = sqrt( Σ_i (d_i − d̄)² / (n − 1) )          (sample std, ddof = 1)
    CI  = d̄ ± t_{0.975, n−1} · s / sqrt(n)

With n = 3 seeds t_{0.975, 2} = 4.303: the interval is wide, and says so.
"""

from __future__ import annotations

import math
from typing import Sequence

from scipy import stats

VERDICTS = ("reproduced", "not_reproduced", "inconclusive", "uninformative")


def paired_differences(a: Sequence[float | None], b: Sequence[float | None]) -> list[float]:
    """d_i = b_i − a_i over the seeds where both arms have a value (same seed order)."""
    if len(a) != len(b):
        raise ValueError(f"paired values: {len(a)} seeds for arm A, {len(b)} for arm B")
    return [float(y) - float(x) for x, y in zip(a, b) if x is not None and y is not None]


def t_interval(d: Sequence[float], level: float = 0.95) -> tuple[float, tuple[float, float]]:
    """(d̄, (low, high)): the mean of `d` and its two-sided t interval (module doc).

    Needs n >= 2; zero spread gives the zero-width interval (d̄, d̄)."""
    n = len(d)
    if n < 2:
        raise ValueError(f"a t interval needs >= 2 paired seeds, got {n}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    mean = math.fsum(d) / n
    s = math.sqrt(math.fsum((x - mean) ** 2 for x in d) / (n - 1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * s / math.sqrt(n)
    return mean, (mean - half, mean + half)


def verdict(ci: tuple[float, float], direction: int, min_effect: float) -> str:
    """The rule, from the interval of d = B − A and the prediction made before the run
    (`direction` +1: B above A, −1: B below A; `min_effect` >= 0: the smallest size,
    in the metric's units, the prediction counts as its effect). With e = direction·d
    and its interval [lo, hi] (the CI flipped when direction = −1):

      reproduced       lo > 0            (the predicted sign, beyond noise)
      not_reproduced   hi < min_effect   (the data rule out an effect of the
                                          predicted size, or show the opposite)
      inconclusive     otherwise         (too few seeds or too noisy to tell)

    A CI that is above 0 and yet below min_effect counts as reproduced in sign: the
    record's mean shows the size beside it."""
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 or -1, got {direction!r}")
    if min_effect < 0:
        raise ValueError(f"min_effect must be >= 0, got {min_effect}")
    lo, hi = sorted((direction * ci[0], direction * ci[1]))
    if lo > 0:
        return "reproduced"
    if hi < min_effect:
        return "not_reproduced"
    return "inconclusive"


def non_inferior(ci: tuple[float, float], margin: float) -> str:
    """A guard "at equal X" (e.g. test success while the primary metric moves): with the
    interval [lo, hi] of B − A, "holds" if lo > −margin, "fails" if hi < −margin,
    else "unclear"."""
    if ci[0] > -margin:
        return "holds"
    if ci[1] < -margin:
        return "fails"
    return "unclear"
