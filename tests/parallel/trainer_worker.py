"""Runs the Trainer (a small config, SFT off) in one process of a run, then writes
what test_multiprocess_trainer.py compares. A subprocess: jax.distributed must start
before jax does, which the pytest process already did.

    python trainer_worker.py --workdir DIR --out F.npz [--env_groups K]
        [--coordinator HOST:PORT --num_processes P --process_id I]
        [--also_restore OTHER_WORKDIR]

Trains, then restores the latest checkpoint of DIR onto a fresh state of this run's
mesh and writes its parameters, gathered whole ("param..." keys), from process 0.
--also_restore: the latest checkpoint of another run (e.g. one written by two
processes) restored here too ("restored/param..." keys).
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

STEPS = 2


def small_config(env_groups: int):
    from mtrl.training.config import base_config
    c = base_config()
    c.model.overrides = dict(num_layers=1, hidden_size=32, intermediate_size=64, num_heads=2,
                             num_kv_heads=1, head_dim=16)
    c.data.num_train = 16
    c.data.num_eval = 2
    c.env.workers = 1
    c.rollout.num_generations = 2
    c.rollout.max_new_tokens = 12
    c.rollout.max_context = 256
    # One process with K·P env groups grows the trees of P processes with K each.
    c.rollout.env_groups = env_groups
    c.train.steps = STEPS
    c.train.tasks_per_step = 2
    c.train.eval_interval = STEPS
    c.train.save_interval = STEPS
    c.train.export_best = False
    c.sft.enabled = False
    # A random model solves nothing: failure_reward = -1 with no baseline gives every
    # completion a non-zero advantage, so the steps move the parameters.
    c.reward.recipe = "recipe"
    c.credit.baseline = "raw"
    c.optim.learning_rate = 1e-2
    c.optim.warmup_steps = 0
    return c


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--env_groups", type=int, default=1)
    parser.add_argument("--coordinator", default="")
    parser.add_argument("--num_processes", type=int, default=1)
    parser.add_argument("--process_id", type=int, default=0)
    parser.add_argument("--also_restore", default="")
    args = parser.parse_args()
    from mtrl.parallel.distributed import DistributedConfig, initialize
    initialize(DistributedConfig(coordinator_address=args.coordinator,
                                 num_processes=args.num_processes,
                                 process_id=args.process_id))
    import jax
    import numpy as np
    from flax import nnx

    from mtrl.parallel.process_rollout import local_params
    from mtrl.training.checkpoints.checkpointing import CheckpointKeeper
    from mtrl.training.loop.trainer import Trainer

    trainer = Trainer(small_config(args.env_groups), args.workdir, show_progress=False)
    try:
        result = trainer.run()
        fresh = trainer.init_state([nnx.split(m)[1] for m in trainer.c.models])
        state = trainer.keeper.restore("latest", target={"train": fresh}).state["train"]
        trees = {"": local_params(state.params)}
        if args.also_restore:
            with CheckpointKeeper(os.path.join(args.also_restore, "checkpoints"),
                                  keep_best=2) as keeper:
                fresh = trainer.init_state([nnx.split(m)[1] for m in trainer.c.models])
                other = keeper.restore("latest", target={"train": fresh}).state["train"]
                trees["restored/"] = local_params(other.params)
    finally:
        trainer.close()
    if args.process_id == 0:
        out = {prefix + "param" + jax.tree_util.keystr(path): np.asarray(leaf)
               for prefix, tree in trees.items()
               for path, leaf in jax.tree_util.tree_leaves_with_path(tree)}
        out["best_step"] = np.array(-1 if result.get("best_step") is None
                                    else result["best_step"])
        np.savez(args.out, **out)


if __name__ == "__main__":
    sys.exit(main())
