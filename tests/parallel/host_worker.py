"""The host-side exchanges of a multi-process step, run in each process of a
jax.distributed cluster (test_process_rollout.py): rows of different counts gathered
(process p holds p + 2 rows), an evaluation of 3 tasks split 2 + 1 and reduced, and
metrics averaged. Process 0 writes what it got.

    python host_worker.py --out F.npz --coordinator H:P --num_processes 2 --process_id I
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--coordinator", default="")
    parser.add_argument("--num_processes", type=int, default=1)
    parser.add_argument("--process_id", type=int, default=0)
    args = parser.parse_args()
    from mtrl.parallel.distributed import DistributedConfig, initialize
    initialize(DistributedConfig(coordinator_address=args.coordinator,
                                 num_processes=args.num_processes,
                                 process_id=args.process_id))
    import jax
    import numpy as np

    from mtrl.parallel.process_rollout import gather_rows, local_tasks, mean_over_processes
    from mtrl.training.evaluate.distributed_eval import evaluate_across_processes
    from mtrl.training.evaluate.evaluation import EvalResult

    p = jax.process_index()
    count = p + 2  # rows of this process: 2, 3, ...
    tokens = np.full((2, count, 3), 10 * (p + 1), np.int32) + np.arange(count)[None, :, None]
    mask = np.ones((2, count, 3), bool)
    (got_tokens, got_mask), total = gather_rows((tokens, mask))

    seen = []

    def run(tasks, key):  # success = the task's value; one transcript per process
        seen.append(list(tasks))
        return EvalResult({"heldout_success": float(np.mean(tasks)),
                           "heldout_reward_turn1": float(np.mean(tasks)) * 2},
                          [f"process {p}"])

    result = evaluate_across_processes([1.0, 0.0, 0.0], jax.random.key(0), run)
    share, index = local_tasks(list(range(4)))
    # "turn2_nodes" only where a process's trees reached turn 2 (here process 1).
    means = mean_over_processes({"reward_mean": float(p), **({"turn2_nodes": 4.0} if p else {}),
                                 "train_success_turn1": 1.0 - p})
    if p == 0:
        np.savez(args.out, tokens=got_tokens, mask=got_mask, total=total,
                 success=result.metrics["heldout_success"],
                 reward=result.metrics["heldout_reward_turn1"],
                 transcripts=np.array(result.transcripts), seen=np.array(seen[0]),
                 share=np.array(share), index=index, reward_mean=means["reward_mean"],
                 success_turn1=means["train_success_turn1"],
                 names=np.array(sorted(means)))


if __name__ == "__main__":
    sys.exit(main())
