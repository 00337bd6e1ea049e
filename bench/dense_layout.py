"""A dense layer's product on [B, L, in] activations vs on one [B·L, in] matrix, and the
layer loop scanned vs unrolled: the supervised step of the embedded default's model,
three ways, side by side in one run.

    python -m bench.dense_layout --out bench/records/train_step/dense_layout.json

XLA's CPU backward of a dot over [B, L, in] emits the weight gradient's operand as a
loop fusion that writes it transposed ([out, B·L]), element by element with strided
reads of the saved activations; flattening the leading axes first (Dense does, since
this benchmark) lets the backward use plain row-major GEMMs. Arms: three_d (the 3-D
product, layers in one lax.scan: the code before both changes), flat (the flat product,
scanned) and flat_unrolled (the flat product, layers in a Python loop:
ModelConfig.layer_loop="unroll", what "auto" picks for the default's 2 layers). Each
arm is the
default's SFT step (value_and_grad of the masked NLL plus AdamW, jitted, params and
optimizer state donated) on the default's model (the tiny preset at 2 layers), at the
row widths the default's SFT and RL use. Arms alternate within each repeat so that
load drifts hit both; reported per shape: the median milliseconds of each arm, each
arm's speed-up over three_d, and the largest difference of an arm's loss and updated
parameters from three_d's (the same math: only float rounding may differ).
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import machine_stamp
from mtrl.models import Transformer, preset
from mtrl.models.dense import Dense
from mtrl.training.sft.sft import make_sft_step

FLAT = Dense.__call__


def three_d_call(self, x):
    """The product on x as it comes ([B, L, in]): nnx.Linear's own dot."""
    return nnx.Linear.__call__(self, x)


ARMS = ("three_d", "flat", "flat_unrolled")


def step_for(arm: str):
    """(graphdef, params, step) of one arm; the arm is fixed when the step is traced."""
    Dense.__call__ = three_d_call if arm == "three_d" else FLAT
    jax.clear_caches()  # the model's inner jitted forward is cached by graph, not by arm
    loop = "unroll" if arm == "flat_unrolled" else "scan"
    graphdef, params = nnx.split(Transformer(preset("tiny", num_layers=2, layer_loop=loop),
                                             rngs=nnx.Rngs(0)))
    step = make_sft_step(graphdef, optax.adamw(1e-3))
    return graphdef, params, step


def rows(batch: int, width: int):
    rng = np.random.default_rng(0)
    tokens = jnp.asarray(rng.integers(0, 256, (batch, width)), jnp.int32)
    mask = jnp.ones((batch, width), bool)
    return tokens, mask


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--shapes", default="32x64,32x128,32x192",
                        help="BATCHxWIDTH of the rows, comma-separated")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iters", type=int, default=5, help="steps timed per repeat")
    args = parser.parse_args()
    stamp = machine_stamp()
    table = []
    for shape in args.shapes.split(","):
        batch, width = map(int, shape.split("x"))
        tokens, mask = rows(batch, width)
        arms, outputs = {}, {}
        for arm in ARMS:
            graphdef, params, step = step_for(arm)
            optimizer = optax.adamw(1e-3)
            state = (jax.tree.map(jnp.copy, params), optimizer.init(params))
            new = step(*jax.tree.map(jnp.copy, state), tokens, mask, mask)  # compile
            outputs[arm] = jax.device_get((new[0], new[2]["loss"]))
            arms[arm] = (step, state)
        times = {arm: [] for arm in arms}
        for _ in range(args.repeats):
            for arm, (step, state) in arms.items():
                p, o = jax.tree.map(jnp.copy, state)
                jax.block_until_ready((p, o))
                started = time.perf_counter()
                for _ in range(args.iters):
                    p, o, metrics = step(p, o, tokens, mask, mask)
                jax.block_until_ready(metrics)
                times[arm].append((time.perf_counter() - started) / args.iters * 1e3)
        median = {arm: statistics.median(t) for arm, t in times.items()}
        row = {"batch": batch, "width": width, "ms_all": times}
        for arm in ARMS:
            row[f"ms_{arm}"] = median[arm]
            row[f"speedup_{arm}"] = median["three_d"] / median[arm]
            row[f"max_abs_difference_{arm}"] = max(
                float(np.max(np.abs(a - b))) for a, b in zip(
                    jax.tree.leaves(outputs["three_d"]), jax.tree.leaves(outputs[arm])))
        table.append(row)
        print(f"{batch}x{width}: " + ", ".join(
            f"{arm} {median[arm]:.0f} ms ({row[f'speedup_{arm}']:.2f}x, max |diff| "
            f"{row[f'max_abs_difference_{arm}']:.1e})" for arm in ARMS), flush=True)
        write_record(args.out, {"command": "python -m bench.dense_layout",
                                "repeats": args.repeats, "iters": args.iters,
                                "model": "tiny preset, 2 layers (the embedded default's)",
                                "table": table}, stamp)
    Dense.__call__ = FLAT


if __name__ == "__main__":
    main()
