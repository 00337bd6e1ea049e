"""Summary statistics of a number over repeated runs (one run per seed), as the
scripts that run an experiment on several seeds report them (tools/run_default.py,
tools/run_textworld.py, tools/compare_methods.py)."""

from __future__ import annotations

import statistics
from typing import Any, Callable, Mapping, Sequence

from mtrl.config.fields import check_choice

# The statistics a summary may hold: stats_over_seeds(stats=...) names some of these.
STATS: dict[str, Callable[[list[float]], float]] = {
    "mean": statistics.fmean, "std": statistics.pstdev, "min": min, "max": max, "n": len}


def stats_over_seeds(runs: Sequence[Mapping[str, Any]], names: Sequence[str],
                     stats: Sequence[str] = ("mean", "std", "min", "max"),
                     ) -> dict[str, dict[str, float]]:
    """Per number in `names`, `stats` over the runs that report it.

    For a number, x_1..x_n are its values in the runs where it is present and not
    None (a failed or partial run drops out of that number only); a number with
    n = 0 is left out of the summary. Then

        mean = (1/n) Σ_i x_i
        std  = sqrt((1/n) Σ_i (x_i − mean)²)
        min  = min_i x_i,  max = max_i x_i,  n = n

    std is the population std (ddof = 0, statistics.pstdev; 0 for one run), not the
    sample std with 1/(n − 1): what these scripts have always reported.

    Returns {name: {stat: value}}, names in the order of `names`, stats in the
    order of `stats`.
    """
    for stat in stats:
        check_choice("stats", stat, STATS)
    out = {}
    for name in names:
        values = [run[name] for run in runs if run.get(name) is not None]
        if values:
            out[name] = {s: STATS[s](values) for s in stats}
    return out
