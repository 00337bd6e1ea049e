"""A toy training run wired like the trainer: CheckpointKeeper + MetricsLogger.

Two agents' parameters, AdamW, a root RNG key folded with the step, a data
iterator whose position lives in the checkpoint's host JSON, latest saves every 3
steps and evaluated saves every 4. Run as a script with `--hang-at K`, the save of
step K stops right before its commit rename (every file written) and prints
HANGING, so a test can SIGKILL the process in the middle of that save.
"""

import argparse
import pathlib
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from mtrl.training.checkpoints.checkpointing import CheckpointKeeper
from mtrl.training.logging import MetricsLogger

_DATA = np.random.default_rng(0).normal(size=(7, 4)).astype(np.float32)
_TARGET = jnp.asarray([0.5, -1.0, 2.0, 0.0])
_OPTIMIZER = optax.adamw(0.1)


def _initial_state():
    params = {"agent0": jnp.zeros(4), "agent1": jnp.ones(4)}
    return {"params": params, "opt_state": _OPTIMIZER.init(params),
            "rng": jax.random.key(42)}


@jax.jit
def _train_step(state, batch, step):
    noise = jax.random.normal(jax.random.fold_in(state["rng"], step), (4,))

    def loss_fn(params):
        return sum(jnp.mean((p - _TARGET - 0.1 * batch - 0.05 * noise) ** 2)
                   for p in params.values())

    loss, grads = jax.value_and_grad(loss_fn)(state["params"])
    updates, opt_state = _OPTIMIZER.update(grads, state["opt_state"], state["params"])
    params = optax.apply_updates(state["params"], updates)
    return dict(state, params=params, opt_state=opt_state), loss


def run(workdir: pathlib.Path, total_steps: int) -> None:
    keeper = CheckpointKeeper(workdir / "checkpoints", keep_best=2)
    state, start, position = _initial_state(), 0, 0
    if keeper.latest_step() is not None:
        start, state, extra = keeper.restore("latest", target=state)
        position = extra["data_position"]
    logger = MetricsLogger(workdir, tensorboard=False,
                           resume_step=start if start else None)
    for step in range(start + 1, total_steps + 1):
        batch = _DATA[position % len(_DATA)]
        position += 1
        state, loss = _train_step(state, batch, step)
        metrics = {"loss": loss}
        extra = {"data_position": position}
        if step % 4 == 0:
            success = jnp.mean(jnp.abs(state["params"]["agent0"] - _TARGET) < 0.3)
            metrics["heldout_success"] = success
            keeper.save_eval(step, state, {"heldout_success": success}, extra)
        elif step % 3 == 0:
            keeper.save_latest(step, state, extra)
        logger.write(step, metrics)
    keeper.close()
    logger.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("workdir", type=pathlib.Path)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--hang-at", type=int, required=True)
    args = parser.parse_args()
    from orbax.checkpoint._src.path import atomicity

    commit = atomicity.AtomicRenameTemporaryPath.finalize

    async def finalize_or_hang(self):
        if self.get_final().name == str(args.hang_at):
            print("HANGING", flush=True)
            while True:
                time.sleep(1)
        return await commit(self)

    atomicity.AtomicRenameTemporaryPath.finalize = finalize_or_hang
    run(args.workdir, args.steps)
