"""Held-out evaluation split across processes and reduced, so that every process
gets the numbers of the whole split (they choose checkpoints, which every process
must choose alike).

Process p of P evaluates tasks[np.array_split(range(n), P)[p]] (n >= P), with the
evaluation key folded with p, and the metrics are reduced as task-weighted means:

    m = Σ_p n_p · m_p / Σ_p n_p

which is the mean over all n tasks for every per-task mean (success, success by
turn, reward, pass@k). "mean turns to success" is a mean over solved episodes, so
its reduction weights by tasks, not by solved episodes: an approximation when the
processes solve different fractions. The feedback gain is exact: its counts
(feedback_gain.gain_counts) are summed over processes and the gain recomputed from
the sums. Transcripts come from process 0's share.
"""

from __future__ import annotations

import zlib
from typing import Callable, Sequence

import jax
import numpy as np

from mtrl.parallel.process_rollout import allgather, is_multiprocess
from mtrl.training.evaluate.evaluation import EvalResult
from mtrl.training.evaluate.feedback_gain import gain_metrics


def evaluate_across_processes(tasks: Sequence, key: jax.Array,
                              run: Callable[[Sequence, jax.Array], EvalResult]) -> EvalResult:
    """`run(tasks, key)` on this process's share of `tasks`, reduced over processes."""
    if not is_multiprocess():
        return run(tasks, key)
    count, index = jax.process_count(), jax.process_index()
    if len(tasks) < count:
        raise ValueError(f"{len(tasks)} evaluation tasks cannot be split over {count} "
                         "processes (config.data.num_eval)")
    share = np.array_split(np.arange(len(tasks)), count)[index]
    result = run([tasks[i] for i in share], jax.random.fold_in(key, index))
    feedback = result.feedback_counts
    gain = f"{result.prefix}_feedback_gain"  # from the summed counts, below
    names = sorted(k for k in result.metrics if not k.startswith(gain))
    # Every process must report the same metrics (and counts) for the sums to line up.
    shown = names + ([] if feedback is None else [f"{gain} {np.shape(feedback)}"])
    name_id = np.int32(zlib.crc32("\n".join(shown).encode()) & 0x7FFFFFFF)  # jax: int32
    if len(set(allgather(name_id).tolist())) != 1:
        raise ValueError("processes evaluated different metric names")
    weight = float(len(share))
    rows = allgather(np.array([weight] + [weight * result.metrics[k] for k in names],
                              np.float64))  # [P, 1 + metrics]
    totals = rows.sum(axis=0)
    metrics = {k: float(v / totals[0]) for k, v in zip(names, totals[1:])}
    if feedback is not None:
        feedback = allgather(np.asarray(feedback, np.int32)).sum(axis=0).astype(np.int64)
        metrics.update(gain_metrics(feedback, result.prefix))
    return EvalResult(metrics, result.transcripts if index == 0 else [],
                      feedback_counts=feedback, prefix=result.prefix)
