"""The feedback-use measure: how much the environment's observation, rather than a
second attempt as such, makes a failed episode succeed at its next turn.

For each evaluation episode p whose turn t (t < T) failed and which plays turn t+1,
turn t+1 is scored twice from the same history and decoding: once after the
environment's observation (o) and once after it is replaced by the content-free
retry message "Try again." (r) (the probe: feedback_probe.py). With
s^o_{p,t+1}, s^r_{p,t+1} ∈ {0, 1} the two successes and c_{p,t} = 1 for the
counted pairs,

    n_t    = Σ_p c_{p,t}
    gain_t = Σ_p c_{p,t} · (s^o_{p,t+1} − s^r_{p,t+1}) / n_t
    gain   = Σ_{p,t} c_{p,t} · (s^o_{p,t+1} − s^r_{p,t+1}) / Σ_t n_t    (pooled over t)

a difference of success rates (a fraction, like every success metric: 0.10 is 10
points), with n = Σ_t n_t, its count of (task, turn) pairs. A policy that ignores the
observation has gain 0 (under greedy decoding exactly 0); one that reads it has a
gain up to 1. The per-turn counts below are sums, so processes add them.

Reported under the split's prefix:
  <prefix>_feedback_gain           pooled gain (absent when n = 0)
  <prefix>_feedback_gain_tasks     n
  <prefix>_feedback_gain_observed  success rate at t+1 after the observation
  <prefix>_feedback_gain_retry     success rate at t+1 after "Try again."
  <prefix>_feedback_gain_turn{t}, <prefix>_feedback_gain_tasks_turn{t}   per t
      (only when T > 2; with T = 2 the pooled numbers are turn 1's)
"""

from __future__ import annotations

import numpy as np

# Columns of gain_counts' rows.
COUNT, OBSERVED, RETRY = 0, 1, 2


def gain_counts(observed: np.ndarray, retry: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """[T−1, 3] int64 per turn t (row t−1): (n_t, Σ_p c·s^o, Σ_p c·s^r).

    observed, retry, counted: [P, T−1] bool; column t−1 is turn t+1's success after
    the observation, after the retry message, and whether pair (p, t) is counted.
    Entries of uncounted pairs are ignored.
    """
    observed, retry, counted = (np.asarray(x) for x in (observed, retry, counted))
    if observed.ndim != 2:
        raise ValueError(f"observed must be [P, T-1], got shape {observed.shape}")
    if retry.shape != observed.shape or counted.shape != observed.shape:
        raise ValueError(f"observed {observed.shape}, retry {retry.shape} and counted "
                         f"{counted.shape} must have one shape [P, T-1]")
    for name, x in (("observed", observed), ("retry", retry), ("counted", counted)):
        if x.dtype != bool:
            raise ValueError(f"{name} must be bool, got {x.dtype}")
    return np.stack([counted.sum(axis=0), (counted & observed).sum(axis=0),
                     (counted & retry).sum(axis=0)], axis=1).astype(np.int64)


def gain_metrics(counts: np.ndarray, prefix: str) -> dict[str, float]:
    """The reported metrics (module docstring) of gain_counts' [T−1, 3] counts."""
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[1] != 3 or counts.shape[0] < 1:
        raise ValueError(f"counts must be [T-1, 3] with T >= 2, got shape {counts.shape}")
    if (counts < 0).any() or (counts[:, 1:] > counts[:, :1]).any():
        raise ValueError("counts must be (n_t, successes <= n_t, successes <= n_t) per turn")
    name = f"{prefix}_feedback_gain"
    total = counts.sum(axis=0)
    metrics = {f"{name}_tasks": float(total[COUNT])}
    if total[COUNT]:
        metrics[name] = float(total[OBSERVED] - total[RETRY]) / float(total[COUNT])
        metrics[f"{name}_observed"] = float(total[OBSERVED]) / float(total[COUNT])
        metrics[f"{name}_retry"] = float(total[RETRY]) / float(total[COUNT])
    if counts.shape[0] > 1:
        for t, (n, observed, retry) in enumerate(counts.tolist(), start=1):
            metrics[f"{name}_tasks_turn{t}"] = float(n)
            if n:
                metrics[f"{name}_turn{t}"] = (observed - retry) / n
    return metrics
