"""The SmolLM2-135M update in float32, bf16 on XLA and bf16 on oneDNN (AMX), paired.

    python -m bench.update_bf16 --out /tmp/update_bf16.json [--rows 8 --length 192]

One MAGRPO train step (one agent, AdamW, float32 master weights, no remat, padded rows,
random advantages) on a randomly initialised SmolLM2-135M-shaped model (preset
`smollm2-135m` with param_dtype float32) for each arm:

  f32          model.dtype float32 (XLA)
  bf16_xla     model.dtype bfloat16, matmul "xla"
  bf16_onednn  model.dtype bfloat16, matmul "onednn" (skipped, with the reason, when the
               kernel is not built)

Each arm compiles first (reported), then the arms' timed calls alternate (--repeats
rounds), so load from other processes falls on all alike. Reported per arm: median
wall seconds, median process CPU seconds (user + system: on a machine shared with
other jobs the wall time grows with their load, the CPU time much less), model
GFLOP/s = 6 * params * real tokens / wall and / (CPU / threads), the loss, and the
1-minute load average around each call. --smoke runs a 2-layer model for a few seconds
(CI runs it: no timing is asserted).
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from bench.smollm2_shape import model_overrides, smollm2_parser
from mtrl.evidence import timing
from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import machine_stamp
from mtrl.kernels import onednn_matmul
from mtrl.losses import PolicyObjectiveConfig
from mtrl.models import Transformer, preset
from mtrl.training.update.minibatch import PolicyMinibatch
from mtrl.training.policy.optim import OptimConfig, make_optimizer
from mtrl.training.policy.train_state import init_train_state
from mtrl.training.update.train_step import make_train_step

MAGRPO = PolicyObjectiveConfig(loss="reinforce", aggregation="seq-mean-token-sum")
OPTIM = OptimConfig(learning_rate=1e-5, warmup_steps=0, max_grad_norm=1.0)
ARMS = {"f32": dict(dtype="float32", matmul="xla"),
        "bf16_xla": dict(dtype="bfloat16", matmul="xla"),
        "bf16_onednn": dict(dtype="bfloat16", matmul="onednn")}


def rows_for(rows: int, length: int, vocab: int, seed: int = 0) -> PolicyMinibatch:
    """One agent's [1, rows, length] minibatch: the first quarter prompt, the rest loss."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, vocab, (1, rows, length)).astype(np.int32)
    token_mask = np.ones_like(tokens, bool)
    loss_mask = np.zeros_like(token_mask)
    loss_mask[..., length // 4:] = True
    adv = (rng.normal(size=(1, rows, 1)) + 0.1).astype(np.float32) * loss_mask
    return PolicyMinibatch(tokens=jnp.asarray(tokens), token_mask=jnp.asarray(token_mask),
                           loss_mask=jnp.asarray(loss_mask),
                           old_logprobs=jnp.where(loss_mask, -5.0, 0.0).astype(jnp.float32),
                           advantages=jnp.asarray(adv),
                           turn_index=jnp.asarray(loss_mask.astype(np.int32)))


def build_arm(config, batch):
    model = Transformer(config, rngs=nnx.Rngs(0))
    graphdef, params = nnx.split(model)
    optimizer = make_optimizer(OPTIM)
    step = make_train_step(graphdef, MAGRPO, optimizer, num_agents=1, shared=False)
    state = init_train_state([params], optimizer, shared=False, keep_reference=False)
    start = time.perf_counter()
    state, metrics = step(state, batch)
    jax.block_until_ready(metrics)
    n_params = int(sum(x.size for x in jax.tree.leaves(params)))
    return {"step": step, "state": state, "compile_s": time.perf_counter() - start,
            "params": n_params}


def timed_call(arm: dict, batch) -> dict:
    """One update of `arm` (its state advanced): mtrl.evidence.timing's record and the loss."""
    def step():
        arm["state"], metrics = arm["step"](arm["state"], batch)
        return jax.block_until_ready(metrics)
    metrics, record = timing.timed(step)
    return {**record, "loss": float(metrics["loss"])}


def main() -> None:
    parser = smollm2_parser(__doc__, ARMS, "2 layers, 2 rows of 32")
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--length", type=int, default=192)
    args = parser.parse_args()
    overrides = model_overrides(args)
    if args.smoke:
        args.rows, args.length, args.repeats = 2, 32, 1
    stamp = machine_stamp()
    base = preset("smollm2-135m", **overrides)
    batch = rows_for(args.rows, args.length, base.vocab_size)
    tokens = args.rows * args.length
    result = {"config": {"rows": args.rows, "length": args.length, "tokens": tokens,
                         "layers": base.num_layers, "jax": jax.__version__,
                         "threads": os.cpu_count(), "command": " ".join(sys.argv)},
              "arms": {}, "skipped": {}}
    arms = {}
    for name in args.arms.split(","):
        if ARMS[name]["matmul"] == "onednn" and not onednn_matmul.usable():
            result["skipped"][name] = onednn_matmul.unusable_reason()
            print(f"{name}: skipped ({onednn_matmul.unusable_reason()})", flush=True)
            continue
        arms[name] = build_arm(base.replace(**ARMS[name]), batch)
        print(f"{name}: compiled in {arms[name]['compile_s']:.1f} s", flush=True)
    calls = {name: [] for name in arms}
    for r in range(args.repeats):
        for name in (list(arms) if r % 2 == 0 else list(arms)[::-1]):
            calls[name].append(timed_call(arms[name], batch))
    for name, arm in arms.items():
        wall = statistics.median(c["wall_s"] for c in calls[name])
        cpu = statistics.median(c["cpu_s"] for c in calls[name])
        flops = 6 * arm["params"] * tokens
        result["arms"][name] = {
            "wall_s": wall, "cpu_s": cpu, "compile_s": arm["compile_s"],
            "model_gflops_wall": flops / wall / 1e9,
            "model_gflops_per_cpu": flops / (cpu / os.cpu_count()) / 1e9,
            "params": arm["params"], "calls": calls[name]}
        print(f"{name:>12}: wall {wall:7.2f} s  cpu {cpu:7.2f} s  "
              f"{flops / wall / 1e9:6.1f} GFLOP/s (wall)  "
              f"{flops / (cpu / os.cpu_count()) / 1e9:6.1f} (per CPU)  "
              f"loss {calls[name][-1]['loss']:.4f}", flush=True)
    if "f32" in arms:
        for name in arms:
            result["arms"][name]["speedup_vs_f32_wall"] = (
                result["arms"]["f32"]["wall_s"] / result["arms"][name]["wall_s"])
            result["arms"][name]["speedup_vs_f32_cpu"] = (
                result["arms"]["f32"]["cpu_s"] / result["arms"][name]["cpu_s"])
    write_record(args.out, result, stamp)


if __name__ == "__main__":
    main()
