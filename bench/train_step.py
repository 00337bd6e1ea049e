"""The RL update with padded rows, packed rows and tree-packed rows, in one run.

    python -m bench.train_step --out train_step.json

(a) The embedded default's tree: experiments/configs/default.py's components (byte
    tokenizer, 2-layer tiny model, code environment), one rollout of its random-init
    policy (P = 3 tasks, T = 2, G = 4, N = 2), rows padded to max_context as the trainer
    lays them out, random non-zero advantages. Also the whole RL step: rollout +
    environment (measured) + each update.
(b) A HumanEval-shaped tree: per task and agent a ~300-token prompt, G = 4 completions of
    256 tokens at turn 1, and (align, J = 4) each joint action's branch continued by a
    40-token observation and 4 more completions of 256 tokens at turn 2; a ~104M-parameter
    model (d 768, 12 layers, 12 heads over 4 kv heads, MLP 3072, byte vocabulary); rows
    padded to max_context = 2048 (humaneval_grpo's) for the padded baseline.

Each mode's update is one MAGRPO train step (separate agents, AdamW), compiled first
(compile time reported), then timed over --repeats calls (median). FLOPs: 6 · params ·
tokens the layout computes (padding slots included for "computed", real tokens only for
"useful": each shared-prefix token once), plus the dense attention products
(12 · layers · heads · head_dim per query-key pair, forward + backward). MFU: useful
model FLOPs (6 · params · tree nodes) per second of the tree-packed step over the
f32 matmul peak measured here. Peak memory: XLA's compiled memory analysis of the
update (arguments + temporaries) on a SmolLM2-135M-shaped model, 16 rows of 512, per
remat policy (compiled, not run).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import machine_stamp
from mtrl.losses import PolicyObjectiveConfig
from mtrl.models import PRESETS, Transformer
from mtrl.training.config import module_from_file
from mtrl.training.update.minibatch import PolicyMinibatch
from mtrl.training.policy.optim import OptimConfig, make_optimizer
from mtrl.training.update.packing import pack_rows
from mtrl.training.policy.train_state import init_train_state
from mtrl.training.update.train_step import make_train_step

MAGRPO = PolicyObjectiveConfig(loss="reinforce", aggregation="seq-mean-token-sum")
OPTIM = OptimConfig(learning_rate=1e-5, warmup_steps=0, max_grad_norm=1.0)
MODES = ("none", "rows", "tree")
# (b)'s model: the issue's ~100M config (104M parameters), and a 3M one of the same
# shape family for the padded/packed/tree comparison when the 100M padded update (about
# 40 TFLOP per call) does not fit the benchmark's time.
B_MODELS = {
    "100m": dict(hidden_size=768, intermediate_size=3072, num_layers=12, num_heads=12,
                 num_kv_heads=4, head_dim=64),
    "3m": dict(hidden_size=256, intermediate_size=768, num_layers=4, num_heads=8,
               num_kv_heads=2, head_dim=32),
}


def matmul_peak_gflops(n: int = 1024, repeats: int = 10) -> float:
    """Best f32 [n, n] @ [n, n] throughput of this CPU under XLA, in GFLOP/s."""
    a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
    f = jax.jit(lambda x, y: x @ y)
    f(a, a).block_until_ready()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        f(a, a).block_until_ready()
        best = min(best, time.perf_counter() - start)
    return 2 * n ** 3 / best / 1e9


def param_count(params) -> int:
    return int(sum(x.size for x in jax.tree.leaves(params)))


def humaneval_rows(num_tasks: int, num_agents: int, length: int, seed: int = 0,
                   prompt: int = 300, new: int = 256, obs: int = 40, g: int = 4
                   ) -> PolicyMinibatch:
    """The rows make_batch lays out for (b)'s tree (align, T = 2), random tokens."""
    rng = np.random.default_rng(seed)
    per_agent = []
    for _ in range(num_agents):
        rows = []  # (context, completion)
        for _ in range(num_tasks):
            p = list(rng.integers(0, 256, prompt))
            first = [list(rng.integers(0, 256, new)) for _ in range(g)]
            rows += [(p, c) for c in first]
            for c in first:
                context = p + c + list(rng.integers(0, 256, obs))
                rows += [(context, list(rng.integers(0, 256, new))) for _ in range(g)]
        per_agent.append(rows)
    c_pad = 1 << (len(per_agent[0]) - 1).bit_length()
    shape = (num_agents, c_pad, length)
    tokens, token_mask, loss_mask = (np.zeros(shape, np.int32), np.zeros(shape, bool),
                                     np.zeros(shape, bool))
    for a, rows in enumerate(per_agent):
        for r, (context, completion) in enumerate(rows):
            k, e = len(context), len(context) + len(completion)
            tokens[a, r, :e] = context + completion
            token_mask[a, r, :e] = True
            loss_mask[a, r, k:e] = True
    return random_advantage_rows(tokens, token_mask, loss_mask, seed)


def random_advantage_rows(tokens, token_mask, loss_mask, seed) -> PolicyMinibatch:
    rng = np.random.default_rng(seed + 1)
    row_adv = rng.normal(size=tokens.shape[:2]).astype(np.float32) + 0.1
    loss_mask = np.asarray(loss_mask)
    return PolicyMinibatch(
        tokens=jnp.asarray(tokens), token_mask=jnp.asarray(token_mask),
        loss_mask=jnp.asarray(loss_mask),
        old_logprobs=jnp.where(loss_mask, -5.0, 0.0).astype(jnp.float32),
        advantages=jnp.asarray(row_adv[:, :, None] * loss_mask),
        turn_index=jnp.asarray(loss_mask.astype(np.int32)))


def default_tree_rows(seed: int, smoke: bool = False) -> tuple[PolicyMinibatch, dict]:
    """(a): one rollout of the embedded default's random-init policy, rows as the trainer
    lays them out, and the rollout's timings. smoke: the default with `--smoke`'s caps
    (mtrl/training/config/smoke.py: 2 tasks, G <= 2, <= 32 new tokens; same model)."""
    config = module_from_file(
        pathlib.Path(__file__).parent.parent / "experiments/configs/default.py").get_config()
    if smoke:
        from mtrl.training.config import apply_smoke
        apply_smoke(config)
    from mtrl.rollout import make_batch, rollout
    from mtrl.rollout.sampler_backend import SamplerBackend
    from mtrl.sampling.sampler import Sampler
    from mtrl.training.run.build import build_components
    from mtrl.training.config import parse
    from mtrl.training.run.keys import RunKeys
    run = parse(config)
    c = build_components(run)
    try:
        sampler = Sampler(c.models[0])
        sampling = run.rollout.sampling_config(stop_token_ids=(c.tokenizer.eos_id,),
                                             pad_id=c.tokenizer.pad_id)
        backend = SamplerBackend(sampler, [nnx.split(m)[1] for m in c.models], sampling)
        tasks = c.train_tasks[:config.train.tasks_per_step]
        keys = RunKeys.from_seed(seed)
        rollout(tasks, c.env, backend, c.tokenizer, run.rollout, keys.rollout(0), c.turn_format)
        start = time.perf_counter()  # second rollout: compiled
        tree = rollout(tasks, c.env, backend, c.tokenizer, run.rollout, keys.rollout(1),
                       c.turn_format)
        wall = time.perf_counter() - start
        batch = make_batch(tree, length=run.rollout.max_context)
        env_s = tree.metrics["rollout/env_seconds"]
        timing = {"rollout_s": wall - env_s, "env_s": env_s}
        rows = random_advantage_rows(batch.tokens, batch.token_mask, batch.loss_mask, seed)
        return rows, timing, config.model, nnx.split(c.models[0])
    finally:
        c.close()


def layout_counts(rows: PolicyMinibatch, mode: str, min_budget: int) -> dict:
    n, b, length = rows.tokens.shape
    if mode == "none":
        real = float(np.sum(np.asarray(rows.token_mask)))
        return {"slots": float(n * b * length), "tokens": real, "bins": float(b),
                "budget": float(length), "dense_pairs": float(n * b * length ** 2)}
    packed = pack_rows(rows.tokens, rows.token_mask, rows.loss_mask, mode, min_budget)
    _, p, s = packed.tokens.shape
    return {"slots": float(n * p * s), "tokens": float(np.sum(np.asarray(packed.token_mask))),
            "bins": float(p), "budget": float(s), "dense_pairs": float(n * p * s * s)}


def bench_update(graphdef, params, rows, mode, min_budget, repeats, remat="none") -> dict:
    num_agents = rows.tokens.shape[0]
    optimizer = make_optimizer(OPTIM)
    step = make_train_step(graphdef, MAGRPO, optimizer, num_agents=num_agents, shared=False,
                           packing=mode, remat=remat, min_budget=min_budget)
    state = init_train_state([params] * num_agents, optimizer, shared=False,
                             keep_reference=False)
    start = time.perf_counter()
    state, metrics = step(state, rows)
    jax.block_until_ready(metrics)
    compile_s = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        state, metrics = step(state, rows)
        jax.block_until_ready(metrics)
        times.append(time.perf_counter() - start)
    return {"update_s": statistics.median(times), "first_call_s": compile_s,
            "compiles": step.num_compiles, "loss": float(metrics["loss"])}


def flops(config, params: int, counts: dict) -> dict:
    per_pair = 12 * config.num_layers * config.num_heads * config.head_dim
    return {"computed": 6 * params * counts["slots"] + per_pair * counts["dense_pairs"],
            "useful": 6 * params * counts["tokens"]}


def compare(name, config, graphdef, params, rows, min_budget, repeats, modes=MODES,
            remat="none") -> dict:
    n_params = param_count(params)
    out = {"params": n_params, "rows": int(np.sum(np.any(np.asarray(rows.loss_mask), axis=2))),
           "modes": {}}
    for mode in modes:
        counts = layout_counts(rows, mode, min_budget)
        result = bench_update(graphdef, params, rows, mode, min_budget, repeats, remat)
        result.update(counts, flops=flops(config, n_params, counts))
        out["modes"][mode] = result
        print(name, mode, json.dumps(result), flush=True)
    m = out["modes"]
    if {"none", "rows"} <= set(m):
        out["packed_vs_padded"] = m["none"]["update_s"] / m["rows"]["update_s"]
    if {"rows", "tree"} <= set(m):
        out["tree_vs_packed_time"] = m["rows"]["update_s"] / m["tree"]["update_s"]
        out["tree_vs_packed_flops"] = (m["rows"]["flops"]["computed"]
                                       / m["tree"]["flops"]["computed"])
        out["tree_vs_packed_tokens"] = m["rows"]["tokens"] / m["tree"]["tokens"]
    return out


def remat_memory(rows_count: int, length: int) -> dict:
    """Compiled peak memory (bytes) of one padded update, SmolLM2-135M shape, per policy."""
    config = dataclasses.replace(PRESETS.get("tiny"), vocab_size=49152, hidden_size=576,
                                 intermediate_size=1536, num_layers=30, num_heads=9,
                                 num_kv_heads=3, head_dim=64, tie_word_embeddings=True,
                                 attention_bias=False, family="llama")
    graphdef, params = nnx.split(nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0))))
    optimizer = make_optimizer(OPTIM)
    shape = (1, rows_count, length)
    rows = PolicyMinibatch(
        tokens=jax.ShapeDtypeStruct(shape, jnp.int32), token_mask=jax.ShapeDtypeStruct(shape, bool),
        loss_mask=jax.ShapeDtypeStruct(shape, bool),
        old_logprobs=jax.ShapeDtypeStruct(shape, jnp.float32),
        advantages=jax.ShapeDtypeStruct(shape, jnp.float32),
        turn_index=jax.ShapeDtypeStruct(shape, jnp.int32))
    state = jax.eval_shape(lambda p: init_train_state([p], optimizer, shared=False,
                                                      keep_reference=False), params)
    out = {"params": param_count(params)}
    for remat in ("none", "dots", "full"):
        step = make_train_step(graphdef, MAGRPO, optimizer, num_agents=1, shared=False,
                               remat=remat)
        compiled = step.lower(state, rows, None).compile()
        analysis = compiled.memory_analysis()
        out[remat] = {"peak_bytes": int(analysis.argument_size_in_bytes
                                        + analysis.temp_size_in_bytes
                                        + analysis.output_size_in_bytes
                                        - analysis.alias_size_in_bytes),
                      "temp_bytes": int(analysis.temp_size_in_bytes)}
        print("remat", remat, out[remat], flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--b-tasks", type=int, default=1)
    parser.add_argument("--b-agents", type=int, default=2)
    parser.add_argument("--b-max-context", type=int, default=2048)
    parser.add_argument("--tree-budget", type=int, default=2048,
                        help="smallest tree bin for (b) (train.pack_budget)")
    parser.add_argument("--b-model", default="100m", choices=sorted(B_MODELS))
    parser.add_argument("--b-modes", default="none,rows,tree")
    parser.add_argument("--skip", default="", help="comma list of parts to skip: a,b,memory")
    parser.add_argument("--b-count-only", action="store_true",
                        help="(b): count every layout's slots and FLOPs, run no update")
    parser.add_argument("--b-remat", default="none",
                        help="remat policy of (b)'s updates, every mode alike (the padded "
                             "update's dense attention over 2048 slots needs ~114 GB without)")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    stamp = machine_stamp()
    result = {"command": "python -m bench.train_step " + " ".join(
                  f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v != ""),
              "jax": jax.__version__}

    def save():
        write_record(args.out, result, stamp)

    result["matmul_peak_gflops"] = matmul_peak_gflops()
    print("matmul peak GFLOP/s", result["matmul_peak_gflops"], flush=True)
    compiles = {}
    if "a" not in skip:
        rows, timing, _, (graphdef, params) = default_tree_rows(seed=0)
        config = nnx.merge(graphdef, params).config
        a = compare("a", config, graphdef, params, rows, 0, max(args.repeats, 3))
        a.update(timing)
        for mode in MODES:
            a["modes"][mode]["rl_step_s"] = (timing["rollout_s"] + timing["env_s"]
                                             + a["modes"][mode]["update_s"])
        a["rl_step_speedup"] = a["modes"]["none"]["rl_step_s"] / a["modes"]["tree"]["rl_step_s"]
        result["a_default"] = a
        compiles["a"] = {m: a["modes"][m]["compiles"] for m in MODES}
        result["compiles"] = compiles
        save()
    if "b" not in skip:
        config = dataclasses.replace(PRESETS.get("tiny"), max_position_embeddings=4096,
                                     **B_MODELS[args.b_model])
        graphdef, params = nnx.split(Transformer(config, rngs=nnx.Rngs(0)))
        modes = tuple(args.b_modes.split(","))
        rows = humaneval_rows(args.b_tasks, args.b_agents, args.b_max_context)
        # Every layout's slots and FLOPs, counted on the host (also for modes not run,
        # e.g. the padded one where it does not fit in memory).
        n_params = param_count(params)
        counted = {m: layout_counts(rows, m, args.tree_budget) for m in MODES}
        result["b_counted"] = {m: dict(c, flops=flops(config, n_params, c))
                               for m, c in counted.items()}
        computed = {m: result["b_counted"][m]["flops"]["computed"] for m in MODES}
        result["packed_vs_padded_flops"] = computed["none"] / computed["rows"]
        result["tree_vs_packed_flops"] = computed["rows"] / computed["tree"]
        if args.b_count_only:
            modes = ()
        b = compare("b", config, graphdef, params, rows, args.tree_budget, args.repeats, modes,
                    remat=args.b_remat)
        b["model"] = args.b_model
        result["b_humaneval"] = b
        compiles["b"] = {m: b["modes"][m]["compiles"] for m in modes}
        result["compiles"] = compiles
        save()
        for key in ("packed_vs_padded", "tree_vs_packed_flops", "tree_vs_packed_time"):
            if key in b:
                result[key] = b[key]
    if "b" not in skip and "tree" in result["b_humaneval"]["modes"]:
        b = result["b_humaneval"]
        tree = b["modes"]["tree"]
        b["mfu"] = tree["flops"]["useful"] / tree["update_s"] / 1e9 / result["matmul_peak_gflops"]
        b["mfu_computed"] = (tree["flops"]["computed"] / tree["update_s"] / 1e9
                             / result["matmul_peak_gflops"])
        result["mfu"] = b["mfu"]
    if "memory" not in skip:
        result["remat_peak_memory_smollm2_16x512"] = remat_memory(16, 512)
    result["compiles"] = compiles
    save()
    print(json.dumps({k: v for k, v in result.items() if not isinstance(v, dict)}, indent=2))


if __name__ == "__main__":
    main()
