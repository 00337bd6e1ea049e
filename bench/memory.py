"""XLA's compiled memory of one tree-packed train step, per attention implementation.

    python -m bench.memory                     # math.py's model, 2 agents
    python -m bench.memory --agents 1 --bins 24 --budget 1024 --remat full
    python -m bench.memory --agents 1 --bins 8 --rows 32 --repeats 3  # + seconds

Compiles (does not run) the update for abstract inputs: N agents' bins [N, P, S] and
rows [N, B, L], math.py's model (the tiny preset cut to 2 layers: 0.5M parameters),
separate agents, AdamW; prints one JSON line per attention implementation with XLA's
temporaries, arguments and outputs in GB, and the [P, heads, S, S] float32 buffer the
scores of one layer take, for scale (BENCHMARKS.md, "Memory").
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import jax
import jax.numpy as jnp
from flax import nnx

from mtrl.losses import PolicyObjectiveConfig
from mtrl.models import PRESETS, Transformer
from mtrl.training.update.minibatch import PolicyMinibatch
from mtrl.training.policy.optim import OptimConfig, make_optimizer
from mtrl.training.update.packing import PackedRows
from mtrl.training.policy.train_state import init_train_state
from mtrl.training.update.train_step import make_train_step

GB = 1e9


def step_memory(attention: str, agents: int, bins: int, budget: int, rows: int, length: int,
                remat: str, layers: int, repeats: int = 0) -> dict:
    config = dataclasses.replace(PRESETS.get("tiny"), num_layers=layers, attention=attention)
    graphdef, params = nnx.split(nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0))))
    optimizer = make_optimizer(OptimConfig(learning_rate=1e-4, warmup_steps=0,
                                           max_grad_norm=1.0))
    state = jax.eval_shape(lambda p: init_train_state([p] * agents, optimizer, shared=False,
                                                      keep_reference=False), params)

    def spec(shape, dtype):
        return jax.ShapeDtypeStruct(shape, dtype)

    row_shape, bin_shape = (agents, rows, length), (agents, bins, budget)
    minibatch = PolicyMinibatch(
        tokens=spec(row_shape, jnp.int32), token_mask=spec(row_shape, bool),
        loss_mask=spec(row_shape, bool), old_logprobs=spec(row_shape, jnp.float32),
        advantages=spec(row_shape, jnp.float32), turn_index=spec(row_shape, jnp.int32))
    packed = PackedRows(
        tokens=spec(bin_shape, jnp.int32), positions=spec(bin_shape, jnp.int32),
        attend_end=spec(bin_shape, jnp.int32), token_mask=spec(bin_shape, bool),
        parent=spec(bin_shape, jnp.int32), node_index=spec(row_shape, jnp.int32),
        predicted=spec(row_shape, bool))
    step = make_train_step(graphdef, PolicyObjectiveConfig(loss="ppo"), optimizer,
                           num_agents=agents, shared=False, packing="tree", remat=remat)
    compiled = step.lower(state, minibatch, packed).compile()
    analysis = compiled.memory_analysis()
    scores = bins * config.num_heads * budget * budget * 4
    out = dict(attention=attention, agents=agents, bins=bins, budget=budget, rows=rows,
               length=length, remat=remat, layers=layers,
               temp_gb=round(analysis.temp_size_in_bytes / GB, 3),
               argument_gb=round(analysis.argument_size_in_bytes / GB, 3),
               output_gb=round(analysis.output_size_in_bytes / GB, 3),
               one_layer_scores_gb=round(scores / GB, 3))
    if repeats:  # seconds per update on concrete inputs: causal bins, every token real
        real = list(jax.tree.map(lambda x: jnp.ones(x.shape, x.dtype), (minibatch, packed)))
        real[1] = real[1].replace(
            attend_end=jnp.full(bin_shape, budget, jnp.int32),
            positions=jnp.broadcast_to(jnp.arange(budget, dtype=jnp.int32), bin_shape),
            parent=jnp.broadcast_to(jnp.maximum(jnp.arange(budget) - 1, 0), bin_shape))
        model_state = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), state)
        times = []
        for _ in range(repeats + 1):
            start = time.perf_counter()
            model_state, _ = jax.block_until_ready(compiled(model_state, *real))  # donated
            times.append(time.perf_counter() - start)
        out["update_s"] = round(min(times[1:]), 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=2)
    parser.add_argument("--bins", type=int, default=32, help="P bins per agent")
    parser.add_argument("--budget", type=int, default=1024, help="S tokens per bin")
    parser.add_argument("--rows", type=int, default=168, help="B rows per agent")
    parser.add_argument("--length", type=int, default=1024, help="L tokens per row")
    parser.add_argument("--remat", default="none")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--attention", nargs="+", default=["xla", "chunked"])
    parser.add_argument("--repeats", type=int, default=0,
                        help="also time this many updates (after one warm-up)")
    args = parser.parse_args()
    for attention in args.attention:
        print(json.dumps(step_memory(attention, args.agents, args.bins, args.budget, args.rows,
                                     args.length, args.remat, args.layers, args.repeats)),
              flush=True)


if __name__ == "__main__":
    main()
