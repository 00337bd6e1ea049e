"""LoRA against full fine-tuning on a SmolLM2-135M-shaped random model, paired in one run.

    python -m bench.lora --out lora.json

update   One RL update (MAGRPO's objective, AdamW, one agent, --rows rows of --length
         tokens with completions on the second half, packing "none", no remat): full
         fine-tuning against LoRA (rank --rank, alpha 2·rank, every projection), compiled
         first, then called alternately --repeats times each; median wall seconds and
         median CPU seconds of this process (every thread: the steadier number on a
         shared machine), and their ratios. Both start from the same base weights and
         see the same rows.
memory   XLA's compiled memory analysis of each update (argument, output, temporaries,
         aliased: peak = argument + output + temporaries - aliased), each update's
         weight-matmul FLOPs (matmul_flops: what the time ratio can reach at most, but
         for the optimizer), and the exact bytes of
         what each holds between steps: the parameters, Adam's moments, the base (LoRA)
         and what a checkpoint writes (TrainState.checkpointed()).
sampler  Decode throughput at batch 1 and --sample-batch: the policy the trainer publishes
         under LoRA (base + adapters, unmerged: the adapters' matmuls run in every step)
         against the same function merged into the base's weights (the program full
         fine-tuning's sampler runs), greedy, alternated (wall and CPU seconds);
         the tokens must agree.

The model: smollm2-135m's shape (30 layers, d 576, MLP 1536, 9 heads over 3 kv heads,
49152-token vocabulary, tied embeddings) in --dtype (float32: storage and compute).
"""

from __future__ import annotations

import argparse
import json
import statistics

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from mtrl.evidence import timing
from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import load_average, machine_stamp
from mtrl.losses import PolicyObjectiveConfig
from mtrl.models import PRESETS, Transformer
from mtrl.models.adapters import (adapted_graphdef, adapter_count, init_adapters, merged_state,
                                  with_adapters)
from mtrl.models.lora import LoRAConfig
from mtrl.sampling import Sampler, SamplingConfig
from mtrl.training.update.minibatch import PolicyMinibatch
from mtrl.training.policy.optim import OptimConfig, make_optimizer
from mtrl.training.policy.train_state import base_layout, init_train_state
from mtrl.training.update.train_step import make_train_step

MAGRPO = PolicyObjectiveConfig(loss="reinforce", aggregation="seq-mean-token-sum")
OPTIM = OptimConfig(learning_rate=1e-5, warmup_steps=0, max_grad_norm=1.0)


def nbytes(tree) -> int:
    return int(sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(tree)))


def rows_of(count: int, length: int, vocab: int, seed: int = 0) -> PolicyMinibatch:
    """[1, count, length] rows: random tokens, the second half of each row trained with a
    random nonzero advantage, on-policy-like old log-probs (ratio is not used by MAGRPO)."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, vocab, (1, count, length)).astype(np.int32)
    token_mask = np.ones(tokens.shape, bool)
    loss_mask = np.zeros(tokens.shape, bool)
    loss_mask[:, :, length // 2:] = True
    advantage = (rng.normal(size=(1, count, 1)) + 0.1).astype(np.float32)
    return PolicyMinibatch(
        tokens=jnp.asarray(tokens), token_mask=jnp.asarray(token_mask),
        loss_mask=jnp.asarray(loss_mask),
        old_logprobs=jnp.where(loss_mask, -10.0, 0.0).astype(jnp.float32),
        advantages=jnp.asarray(advantage * loss_mask),
        turn_index=jnp.asarray(loss_mask.astype(np.int32)))


def memory_analysis(step, state, rows) -> dict:
    """XLA's compiled memory analysis of the update (bytes)."""
    analysis = step.lower(state, rows, None).compile().memory_analysis()
    out = {name: int(getattr(analysis, f"{name}_size_in_bytes"))
           for name in ("argument", "output", "temp", "alias")}
    out["peak"] = out["argument"] + out["output"] + out["temp"] - out["alias"]
    return out


def matmul_flops(config, tokens: int, adapters: int | None) -> float:
    """The update's weight-matmul FLOPs (attention scores, norms and the optimizer
    left out: the same in both arms but for Adam over every weight in full fine-tuning).
    P = the layers' projection weights, V·D the tied output projection, whose logits
    the chunked log-probabilities compute twice (forward, and again in the backward):

        full:  T · (2P fwd + 2P dX + 2P dW + 3 · 2VD + 2VD dW of the table)
        LoRA:  T · (2P fwd + 2P dX + 3 · 2VD + 6 · adapters)     (no dW of the base)
    """
    d, f, hd = config.hidden_size, config.intermediate_size, config.head_dim
    q, kv = config.num_heads * hd, config.num_kv_heads * hd
    projections = config.num_layers * (d * (q + 2 * kv) + q * d + 3 * d * f)
    head = 3 * 2 * config.vocab_size * d  # forward, recomputed forward, dX (tied: no dW)
    if adapters is None:
        return float(tokens * (6 * projections + head + 2 * config.vocab_size * d))
    return float(tokens * (4 * projections + head + 6 * adapters))


def held_bytes(state) -> dict:
    """Bytes of what a train state holds between steps, by part."""
    lora = state.lora is not None
    return {"trained_params": nbytes(state.params), "adam_moments": nbytes(state.opt_state),
            "base": nbytes(state.ref_params) if lora else 0,
            "total": nbytes((state.params, state.opt_state, state.ref_params)),
            "checkpoint": nbytes(state.checkpointed().params)
            + nbytes(state.checkpointed().opt_state)}


def timed_step(step, state, rows):
    """(state, wall seconds, CPU seconds of this process, loss) of one update. The CPU
    time (every thread's) is the steadier number on a shared machine: other processes
    stretch the wall time, not the work done."""
    (state, metrics), record = timing.timed(
        lambda: jax.block_until_ready(step(state, rows)))
    return state, record["wall_s"], record["cpu_s"], float(metrics["loss"])


def bench_update(config, base, lora, rows, repeats, save=lambda out: None) -> dict:
    """Full fine-tuning and LoRA updates, compiled, then alternated `repeats` times
    (`save(partial result)` after each round: a killed run keeps what it measured)."""
    graphdef = nnx.graphdef(nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0))))
    optimizer = make_optimizer(OPTIM)
    # One policy in the shared layout (no agent axis): LoRA's base is `base` itself, as
    # in a trainer; full fine-tuning trains a copy of it.
    arms = {
        "full": (make_train_step(graphdef, MAGRPO, optimizer, num_agents=1, shared=True),
                 init_train_state([base], optimizer, shared=True, keep_reference=False)),
        "lora": (make_train_step(adapted_graphdef(config, lora), MAGRPO, optimizer,
                                 num_agents=1, shared=True),
                 init_train_state([init_adapters(config, lora, jax.random.key(1))], optimizer,
                                  shared=True, keep_reference=False, lora=lora,
                                  base=base_layout([base], shared=True))),
    }
    out = {}
    for name, (step, state) in arms.items():
        out[name] = {"memory": memory_analysis(step, state, rows), "held": held_bytes(state)}
        print(name, "memory", json.dumps(out[name]), flush=True)
    states = {name: state for name, (_, state) in arms.items()}
    for name, (step, _) in arms.items():  # compile (and the first call)
        states[name], seconds, _, loss = timed_step(step, states[name], rows)
        out[name].update(first_call_s=seconds, first_loss=loss)
    times = {name: [] for name in arms}
    cpu = {name: [] for name in arms}
    for _ in range(repeats):
        for name, (step, _) in arms.items():
            states[name], seconds, cpu_seconds, _ = timed_step(step, states[name], rows)
            times[name].append(seconds)
            cpu[name].append(cpu_seconds)
        print("update wall / cpu seconds", {k: [f"{t:.1f}/{c:.1f}" for t, c in
                                                zip(times[k], cpu[k])] for k in arms},
              flush=True)
        save(dict(out, times_s=times, cpu_times_s=cpu))
    for name in arms:
        out[name].update(update_s=statistics.median(times[name]), times_s=times[name],
                         update_cpu_s=statistics.median(cpu[name]), cpu_times_s=cpu[name],
                         compiles=arms[name][0].num_compiles)
    out["full_over_lora_time"] = out["full"]["update_s"] / out["lora"]["update_s"]
    out["full_over_lora_cpu_time"] = out["full"]["update_cpu_s"] / out["lora"]["update_cpu_s"]
    out["full_over_lora_peak_memory"] = (out["full"]["memory"]["peak"]
                                         / out["lora"]["memory"]["peak"])
    tokens = int(rows.tokens.size)
    adapters = adapter_count(arms["lora"][1].params)
    out["full"]["matmul_gflop"] = matmul_flops(config, tokens, None) / 1e9
    out["lora"]["matmul_gflop"] = matmul_flops(config, tokens, adapters) / 1e9
    out["full_over_lora_matmul_flops"] = out["full"]["matmul_gflop"] / out["lora"]["matmul_gflop"]
    out["full_over_lora_held"] = out["full"]["held"]["total"] / out["lora"]["held"]["total"]
    out["full_over_lora_checkpoint"] = (out["full"]["held"]["checkpoint"]
                                        / out["lora"]["held"]["checkpoint"])
    del arms, states["full"]  # the sampler part runs without full fine-tuning's state
    return out, states["lora"]


def bench_sampler(config, lora_state, batches, prompt_len, new_tokens, repeats) -> dict:
    """Greedy decode of the published LoRA policy (unmerged) vs its merged weights."""
    lora = lora_state.lora
    base_graph = nnx.graphdef(nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0))))
    base, adapters = lora_state.ref_params, lora_state.params
    # The trained adapters' B is still ~0 after a few small steps; give B values so the
    # merged and unmerged programs compute a visibly adapted function.
    adapters = jax.tree.map(lambda x: x + 0.02 * jax.random.normal(jax.random.key(2), x.shape),
                            adapters)
    unmerged = with_adapters(base, adapters)
    samplers = {"lora_unmerged": Sampler(nnx.merge(adapted_graphdef(config, lora), unmerged)),
                "merged": Sampler(nnx.merge(base_graph, merged_state(base, adapters, lora)))}
    sampling = SamplingConfig(greedy=True, max_new_tokens=new_tokens)
    out = {}
    rng = np.random.default_rng(0)
    for batch in batches:
        prompts = [list(rng.integers(0, config.vocab_size, prompt_len)) for _ in range(batch)]
        tokens = {}
        times, cpu = {name: [] for name in samplers}, {name: [] for name in samplers}
        for name, sampler in samplers.items():  # compile
            tokens[name] = np.asarray(sampler.generate(prompts, jax.random.key(0), sampling)
                                      .output.tokens)
        for _ in range(repeats):
            for name, sampler in samplers.items():
                _, record = timing.timed(lambda: jax.block_until_ready(
                    sampler.generate(prompts, jax.random.key(0), sampling).output.tokens))
                times[name].append(record["wall_s"])
                cpu[name].append(record["cpu_s"])
        row = {name: {"seconds": statistics.median(t), "times_s": t,
                      "cpu_s": statistics.median(cpu[name]), "cpu_times_s": cpu[name],
                      "tokens_per_s": batch * new_tokens / statistics.median(t)}
               for name, t in times.items()}
        row["same_tokens"] = bool(np.array_equal(tokens["lora_unmerged"], tokens["merged"]))
        row["merged_over_unmerged_speed"] = (row["lora_unmerged"]["seconds"]
                                             / row["merged"]["seconds"])
        row["merged_over_unmerged_cpu"] = row["lora_unmerged"]["cpu_s"] / row["merged"]["cpu_s"]
        out[f"batch_{batch}"] = row
        print("sampler batch", batch, json.dumps(row), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--sample-batch", type=int, default=8)
    parser.add_argument("--prompt-len", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--skip", default="", help="comma list of parts to skip: sampler")
    parser.add_argument("--layers", type=int, default=0,
                        help="override the layer count (0: the preset's 30; a smoke run)")
    args = parser.parse_args()
    overrides = dict(dtype=args.dtype, param_dtype=args.dtype)
    if args.layers:
        overrides["num_layers"] = args.layers
    config = PRESETS.get("smollm2-135m").replace(**overrides)
    lora = LoRAConfig(rank=args.rank, alpha=2.0 * args.rank)
    stamp = machine_stamp()
    result = {"command": "python -m bench.lora " + " ".join(
                  f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if v != ""),
              "jax": jax.__version__, "model_params": config.num_params(),
              "lora": {"rank": lora.rank, "alpha": lora.alpha, "targets": list(lora.targets)}}

    def save():
        write_record(args.out, result, stamp)

    base = nnx.split(Transformer(config, rngs=nnx.Rngs(0)))[1]
    result["lora"]["trained_params"] = adapter_count(init_adapters(config, lora,
                                                                   jax.random.key(1)))
    rows = rows_of(args.rows, args.length, config.vocab_size)
    def save_update(partial):
        result["update"] = partial
        save()

    update, lora_state = bench_update(config, base, lora, rows, args.repeats, save_update)
    result["update"] = {**update, "load_after": load_average()}  # the part's own span end
    save()
    if "sampler" not in args.skip.split(","):
        result["sampler"] = bench_sampler(config, lora_state, (1, args.sample_batch),
                                          args.prompt_len, args.new_tokens, args.repeats)
    save()
    u = result["update"]
    print(f"update: full {u['full']['update_s']:.2f} s, LoRA {u['lora']['update_s']:.2f} s "
          f"({u['full_over_lora_time']:.2f}x; CPU {u['full_over_lora_cpu_time']:.2f}x); compiled peak {u['full']['memory']['peak'] / 1e9:.2f}"
          f" vs {u['lora']['memory']['peak'] / 1e9:.2f} GB; held {u['full']['held']['total'] / 1e9:.2f}"
          f" vs {u['lora']['held']['total'] / 1e9:.2f} GB; checkpoint "
          f"{u['full']['held']['checkpoint'] / 1e6:.1f} vs {u['lora']['held']['checkpoint'] / 1e6:.1f} MB",
          flush=True)


if __name__ == "__main__":
    main()
