"""Runs three train steps (and greedy sampling) of a small model on a mesh and writes
what the equality tests compare. Run as a subprocess: the device count (XLA_FLAGS) and
jax.distributed must be set before jax starts, which the pytest process already did.

    python steps_worker.py --out F.npz --mesh none|auto|d,f,t [--mesh ...]
        [--packing none|tree] [--sample] [--save DIR]
        [--coordinator HOST:PORT --num_processes P --process_id I]

Each --mesh runs in turn in this process (keys of the .npz are prefixed "<mesh>/");
"<mesh>@tree" runs that mesh with tree packing instead of --packing, "<mesh>@lora"
with LoRA adapters (rank 2) over the frozen base;
--mesh none: the plain single-device code path (no plan), the reference. --save
checkpoints the last mesh's final state; --restore DIR instead restores DIR's
checkpoint onto each mesh's fresh state and reports its parameters (no steps).
With --num_processes > 1 every process feeds only its own rows (a contiguous share of
the global batch) and the step assembles them (ShardingPlan.global_rows).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--mesh", action="append")
    parser.add_argument("--packing", default="none")
    parser.add_argument("--sample", action="store_true")
    parser.add_argument("--coordinator", default="")
    parser.add_argument("--num_processes", type=int, default=1)
    parser.add_argument("--process_id", type=int, default=0)
    parser.add_argument("--save", default="")
    parser.add_argument("--restore", default="")
    return parser.parse_args()


def main() -> None:
    args = parse()
    results = {}
    meshes = args.mesh or ["none"]
    for i, mesh in enumerate(meshes):
        save = args.save if i == len(meshes) - 1 else ""
        results.update({f"{mesh}/{k}": v for k, v in run(args, mesh, save).items()})
    if args.process_id == 0:
        import numpy as np
        np.savez(args.out, **results)


_INITIALIZED = []


def run(args, mesh: str, save: str) -> dict:
    mesh, _, override = mesh.partition("@")
    lora = override == "lora"  # LoRA adapters over the frozen base, --packing as given
    packing = args.packing if lora or not override else override
    from mtrl.parallel.distributed import DistributedConfig, initialize
    if not _INITIALIZED:
        initialize(DistributedConfig(coordinator_address=args.coordinator,
                                     num_processes=args.num_processes,
                                     process_id=args.process_id))
        _INITIALIZED.append(True)
    import jax
    import numpy as np
    from flax import nnx

    from mtrl.losses import KLPenaltyConfig, PolicyObjectiveConfig
    from mtrl.models import PRESETS, Transformer
    from mtrl.parallel import MeshConfig, ShardingPlan
    from mtrl.training.update.minibatch import PolicyMinibatch
    from mtrl.training.policy.optim import OptimConfig, make_optimizer
    from mtrl.training.policy.train_state import init_train_state
    from mtrl.training.update.train_step import make_train_step

    config = dataclasses.replace(PRESETS.get("tiny"), num_layers=1, hidden_size=32,
                                 intermediate_size=64, head_dim=8, num_heads=4,
                                 num_kv_heads=2)
    n, c, length = 2, 8, 16
    models = [Transformer(config, rngs=nnx.Rngs(a)) for a in range(n)]
    graphdef = nnx.split(models[0])[0]
    params = [nnx.split(m)[1] for m in models]
    rng = np.random.default_rng(0)
    token_mask = np.zeros((n, c, length), bool)
    loss_mask = np.zeros((n, c, length), bool)
    for row in range(c):
        prompt, completion = 3 + row % 3, 3 + row % 5
        token_mask[:, row, :prompt + completion] = True
        loss_mask[:, row, prompt:prompt + completion] = True
    tokens = np.where(token_mask, rng.integers(0, 256, (n, c, length)), 0).astype(np.int32)
    advantages = rng.normal(size=(n, c, 1)).astype(np.float32) * loss_mask
    full = PolicyMinibatch(tokens=tokens, token_mask=token_mask, loss_mask=loss_mask,
                           # REINFORCE reads no old log-probabilities (one compile fewer)
                           old_logprobs=np.zeros((n, c, length), np.float32),
                           advantages=advantages.astype(np.float32),
                           turn_index=loss_mask.astype(np.int32))
    optim = make_optimizer(OptimConfig(learning_rate=1e-2, warmup_steps=0, max_grad_norm=1.0))
    objective = PolicyObjectiveConfig(loss="reinforce", aggregation="token-mean",
                                      kl=KLPenaltyConfig("k3", 0.05))
    state = init_train_state(params, optim, shared=False, keep_reference=True)
    if lora:
        from mtrl.models.adapters import adapted_graphdef, init_adapters
        from mtrl.models.lora import LoRAConfig
        from mtrl.training.policy.train_state import base_layout
        adapters_config = LoRAConfig(rank=2, alpha=4.0)
        adapters = [init_adapters(config, adapters_config, jax.random.key(a)) for a in range(n)]
        state = init_train_state(adapters, optim, shared=False, keep_reference=True,
                                 lora=adapters_config, base=base_layout(params, False))
        graphdef = adapted_graphdef(config, adapters_config)
    plan = None
    if mesh != "none":
        plan = ShardingPlan.build(MeshConfig(mesh), config)
        state = plan.shard_tree(state)
    step = make_train_step(graphdef, objective, optim, num_agents=n, shared=False,
                           packing=packing, shardings=plan)
    if jax.process_count() > 1:
        share = c // jax.process_count()
        rows = slice(args.process_id * share, (args.process_id + 1) * share)
        batch = plan.global_rows(jax.tree.map(lambda x: x[:, rows], full))
    else:
        batch = full
    if args.restore:
        from mtrl.training.checkpoints.checkpointing import CheckpointKeeper
        with CheckpointKeeper(args.restore, keep_best=1) as keeper:
            state = keeper.restore("latest", target={"train": state}).state["train"]
    losses, grad_norms = [], []
    for _ in range(0 if args.restore else 3):
        state, metrics = step(state, batch)
        losses.append([float(metrics[f"loss/agent{a}"]) for a in range(n)])
        grad_norms.append([float(metrics[f"grad_norm/agent{a}"]) for a in range(n)])
    out = dict(losses=np.array(losses), grad_norms=np.array(grad_norms),
               compiles=np.array(step.num_compiles))
    from jax.experimental import multihost_utils
    flat = jax.tree_util.tree_leaves_with_path(state.params)
    for path, leaf in flat:
        name = "param" + jax.tree_util.keystr(path)
        out[name] = np.asarray(multihost_utils.process_allgather(leaf, tiled=True))
        if plan is not None and args.process_id == 0:
            out["spec" + jax.tree_util.keystr(path)] = np.array(str(leaf.sharding.spec))
    if args.sample and not override:
        from mtrl.sampling import Sampler, SamplingConfig
        sampler = Sampler(nnx.merge(graphdef, params[0]), shardings=plan)
        prompts = [[int(t) for t in tokens[0, row, :3 + row % 3]] for row in range(c)]
        generation = sampler.generate(prompts, jax.random.key(0),
                                      SamplingConfig(greedy=True, max_new_tokens=8,
                                                     pad_id=256))
        out["greedy"] = np.asarray(generation.output.tokens)
    if save:
        from mtrl.training.checkpoints.checkpointing import CheckpointKeeper
        with CheckpointKeeper(save, keep_best=1) as keeper:
            keeper.save_eval(3, {"train": state}, {"heldout_success": 0.5}, {"step": 3})
    return out


if __name__ == "__main__":
    sys.exit(main())
