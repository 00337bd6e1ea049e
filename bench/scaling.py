"""Per-device memory and step time of the RL train step on several meshes.

    XLA_FLAGS=--xla_force_host_platform_device_count=8 \\
        python -m bench.scaling --out scaling.json

(the benchmark sets that flag itself when it is unset). For each model (the `tiny`
preset and a ~100M-parameter Qwen2-style config on the byte vocabulary) and each mesh
(data, fsdp, tensor), it lays out a one-policy train state (params + AdamW moments)
with ShardingPlan, runs one compiling step and --steps timed steps of a batch of
--rows rows x --length tokens, and records

    param_bytes_per_device   bytes of parameter shards on the fullest device
    opt_bytes_per_device     bytes of optimizer-state shards on the fullest device
    step_s                   median wall seconds of a step (compiled, blocked on);
                             null when the mesh's state would not fit this machine's
                             memory (all 8 simulated devices share one host's RAM:
                             --max_host_gib), then the bytes come from the shardings'
                             shard shapes without materialising the state

The simulated devices of one CPU share its cores, so step_s measures the sharded
program's overhead, not a speedup; the memory columns are what a real mesh holds
(FSDP divides both by the fsdp size, tensor parallelism the matrices by tensor).
JSON: {"devices", "models": {name: {"num_params", "meshes": [...]}}, "meshes": the
~100M model's list}.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from flax import nnx  # noqa: E402

from mtrl.evidence.bench_record import write_record  # noqa: E402
from mtrl.evidence.stamp import machine_stamp  # noqa: E402

from mtrl.losses import PolicyObjectiveConfig  # noqa: E402
from mtrl.models import PRESETS, Transformer  # noqa: E402
from mtrl.parallel import MeshConfig, ShardingPlan, bytes_per_device  # noqa: E402
from mtrl.training.update.minibatch import PolicyMinibatch  # noqa: E402
from mtrl.training.policy.optim import OptimConfig, make_optimizer  # noqa: E402
from mtrl.training.policy.train_state import init_train_state  # noqa: E402
from mtrl.training.update.train_step import make_train_step  # noqa: E402

MODELS = {
    "tiny": PRESETS.get("tiny"),
    # ~101M parameters: 16 layers of D = 768, 12 heads over 4 kv heads, F = 2048.
    "qwen2-100m": dataclasses.replace(
        PRESETS.get("qwen2-3m"), hidden_size=768, intermediate_size=2048, num_layers=16,
        num_heads=12, num_kv_heads=4, head_dim=64),
}
MESHES = ("8,1,1", "1,8,1", "2,4,1", "2,2,2", "1,4,2")


def minibatch(config, rows: int, length: int, seed: int = 0) -> PolicyMinibatch:
    """One agent's rows: a prompt of a quarter of the length, the rest trained."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, 256, (1, rows, length)).astype(np.int32)
    token_mask = np.ones((1, rows, length), bool)
    loss_mask = np.zeros((1, rows, length), bool)
    loss_mask[..., length // 4:] = True
    advantages = rng.normal(size=(1, rows, 1)).astype(np.float32) * loss_mask
    return PolicyMinibatch(tokens=tokens, token_mask=token_mask, loss_mask=loss_mask,
                           old_logprobs=np.zeros((1, rows, length), np.float32),
                           advantages=advantages, turn_index=loss_mask.astype(np.int32))


def planned_bytes(plan: ShardingPlan, abstract) -> int:
    """Bytes on the fullest device of `abstract` (ShapeDtypeStructs) laid out by plan."""
    shardings = plan.tree_shardings(abstract)
    per_device: dict = {}
    for leaf, sharding in zip(jax.tree.leaves(abstract), jax.tree.leaves(shardings)):
        shard = int(np.prod(sharding.shard_shape(leaf.shape))) * leaf.dtype.itemsize
        for device in sharding.addressable_devices:
            per_device[device] = per_device.get(device, 0) + shard
    return max(per_device.values())


def bench(config, mesh: str, rows: int, length: int, steps: int, max_host_bytes: float
          ) -> dict:
    plan = ShardingPlan.build(MeshConfig(mesh), config)
    optimizer = make_optimizer(OptimConfig(learning_rate=1e-5, warmup_steps=0))
    abstract = jax.eval_shape(lambda: init_train_state(
        [nnx.split(Transformer(config, rngs=nnx.Rngs(0)))[1]], optimizer, shared=True,
        keep_reference=False))
    entry = {"shape": [int(v) for v in mesh.split(",")],
             "param_bytes_per_device": planned_bytes(plan, abstract.params),
             "opt_bytes_per_device": planned_bytes(plan, abstract.opt_state),
             "step_s": None, "measured": False}
    # State on all devices, plus gradients and a full copy while laying it out.
    need = (jax.device_count() * (2 * entry["param_bytes_per_device"]
                                  + entry["opt_bytes_per_device"])
            + 4 * sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(abstract.params)))
    if need > max_host_bytes:
        return entry
    model = Transformer(config, rngs=nnx.Rngs(0))
    graphdef, params = nnx.split(model)
    state = plan.shard_tree(init_train_state([params], optimizer, shared=True,
                                             keep_reference=False))
    del model, params
    step = make_train_step(graphdef, PolicyObjectiveConfig(loss="reinforce",
                                                           aggregation="token-mean"),
                           optimizer, num_agents=1, shared=True, shardings=plan)
    batch = minibatch(config, rows, length)
    state, metrics = step(state, batch)  # compiles
    jax.block_until_ready(metrics)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        state, metrics = step(state, batch)
        jax.block_until_ready((state, metrics))
        times.append(time.perf_counter() - start)
    if step.num_compiles != 1:
        raise RuntimeError(f"mesh {mesh}: the step compiled {step.num_compiles} times")
    held = (max(bytes_per_device(state.params).values()),
            max(bytes_per_device(state.opt_state).values()))
    if held != (entry["param_bytes_per_device"], entry["opt_bytes_per_device"]):
        raise RuntimeError(f"mesh {mesh}: held bytes {held} differ from the plan's")
    return dict(entry, step_s=statistics.median(times), measured=True,
                loss=float(metrics["loss"]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--meshes", default=";".join(MESHES))
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--length", type=int, default=64)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--max_host_gib", type=float, default=4.0,
                        help="skip running meshes whose state would need more host RAM")
    args = parser.parse_args(argv)
    stamp = machine_stamp()
    result = {"devices": jax.device_count(), "platform": jax.devices()[0].platform,
              "rows": args.rows, "length": args.length, "models": {}}
    for name in args.models.split(","):
        config = MODELS[name]
        params = nnx.split(nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0))))[1]
        count = sum(int(np.prod(x.shape)) for x in jax.tree.leaves(params))
        entries = []
        for mesh in args.meshes.split(";"):
            entry = bench(config, mesh, args.rows, args.length, args.steps,
                          args.max_host_gib * 2**30)
            entries.append(entry)
            print(f"{name:11s} mesh {mesh:6s} params/device "
                  f"{entry['param_bytes_per_device'] / 2**20:8.1f} MiB  opt/device "
                  f"{entry['opt_bytes_per_device'] / 2**20:8.1f} MiB  step "
                  + (f"{entry['step_s']:.3f} s" if entry["measured"] else "not run (memory)"),
                  flush=True)
        result["models"][name] = {"num_params": count, "meshes": entries}
    big = [n for n in result["models"] if n != "tiny"]
    result["meshes"] = result["models"][big[0] if big else "tiny"]["meshes"]
    write_record(args.out, result, stamp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
