"""The accelerator record: sampler beside transformers' generate, the
tree-packed update's MFU, tree vs packed update time and an RL step split, one run.

    python -m bench.gpu --out bench/records/gpu   # writes bench/records/gpu/<device>.json
    python -m bench.gpu --small --out /tmp/gpu     # tiny shapes, any machine, seconds

Parts (each recorded with its error instead of ending the run if it fails):

  matmul   the chip's bf16 peak, measured here: the best of --repeats [n, n] @ [n, n]
           bf16 products (n = 8192; --small 256), 2n³ FLOPs each.
  hbm      the memory bandwidth, measured here: the best of --repeats copies of a 4 GiB
           array (--small 16 MiB), bytes read + bytes written per second.
  sampler  a SmolLM2-135M-shaped model (random init, bf16 weights and compute) saved
           once and loaded by both mtrl's Sampler and transformers (bf16, on the GPU when
           torch sees one, else on the CPU: `hf_device` says which); greedy, exactly
           --new-tokens per row from --prompt-len prompts, batches 1, 8, 64; tokens/s
           of one whole generate call (median, calls alternating: bench/sampler.py's
           method and helpers). sampler_vs_hf_b64 = mtrl tok/s / HF tok/s at batch 64.
           decode_roofline_fraction = mtrl tok/s over batch · bandwidth / bytes read per
           decode step (every weight once, plus each row's whole K/V cache, which the
           cached forward's reference attention reads at every step).
  train    per shape (SmolLM2-135M and Qwen2.5-0.5B; --small: tiny ones), float32
           master weights with bf16 compute (the GPU design, BUILD.md): one MAGRPO update
           of HumanEval-shaped trees (bench.train_step.humaneval_rows: per task a
           300-token prompt, G = 4 completions of 256 tokens, each continued by a
           40-token observation and 4 more) in packing "rows" and "tree".
           train_mfu = useful FLOPs (6 · params · tree nodes) / update time / the matmul
           peak; tree_vs_packed_time = rows time / tree time. A mode whose attention
           (auto: cuDNN on a GPU) fails is recorded with its error and rerun with the
           chunked path, so one failing kernel still leaves a number.
  rl_step  the embedded default's step split: one rollout of its random-init policy
           (device time and environment time as the rollout reports them) and its
           tree-packed update (bench.train_step.default_tree_rows and bench_update);
           --small: the default with --smoke's caps (2 tasks, G = 2, 32 new tokens).

The record is rewritten after every part, so a run stopped by a time limit keeps what
finished (bench/gpu_record.sh runs this on a device machine). Every part also records
the device's peak memory so far where the device reports it (`peak_memory_gib`).

On CPU (--small) the numbers only show that every part runs; bench/records/gpu/ keeps records
made on an H100 or H200 (BENCHMARKS.md, "GPU").
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import statistics
import sys
import tempfile
import time
import traceback

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from bench import sampler as bench_sampler  # the sibling benchmarks' helpers, not copies
from bench import train_step as bench_train_step
from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import machine_stamp
from mtrl.models import PRESETS, Transformer, load_hf_checkpoint, save_hf_checkpoint
from mtrl.models.attention import resolve_implementation
from mtrl.sampling import BucketPolicy, Sampler, SamplingConfig

BATCHES = (1, 8, 64)
TRAIN_SHAPES = ("smollm2-135m", "qwen2.5-0.5b")
# --small: the same families at a few thousand parameters (CPU seconds).
SMALL = dict(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=4, num_kv_heads=2,
             head_dim=8, vocab_size=300, max_position_embeddings=512)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="directory; writes <device>.json there")
    parser.add_argument("--small", action="store_true", help="tiny shapes (CPU smoke run)")
    parser.add_argument("--repeats", type=int, default=None, help="timed calls (default 5; 2)")
    parser.add_argument("--prompt-len", type=int, default=None, help="default 64; --small 8")
    parser.add_argument("--new-tokens", type=int, default=None, help="default 128; --small 8")
    parser.add_argument("--train-tasks", type=int, default=None, help="trees per update "
                        "(default 2; --small 1)")
    parser.add_argument("--remat", default="none", help="remat of the train updates")
    parser.add_argument("--train-shapes", default=",".join(TRAIN_SHAPES),
                        help="comma list of the train part's shapes")
    parser.add_argument("--skip", default="", help="comma list of parts to skip: "
                        "matmul,hbm,sampler,train,rl_step")
    args = parser.parse_args(argv)
    small = args.small
    for name, full, tiny in (("repeats", 5, 2), ("prompt_len", 64, 8), ("new_tokens", 128, 8),
                             ("train_tasks", 2, 1)):
        if getattr(args, name) is None:
            setattr(args, name, tiny if small else full)
    return args


def device_name() -> str:
    """File-name slug of the first device's kind ('nvidia-h100-80gb-hbm3', 'cpu')."""
    device = jax.devices()[0]
    kind = device.device_kind if device.platform != "cpu" else "cpu"
    return re.sub(r"[^a-z0-9]+", "-", kind.lower()).strip("-") or device.platform


def model_config(name: str, small: bool, **changes):
    config = PRESETS.get(name)
    if small:
        config = config.replace(**SMALL, bos_token_id=None, eos_token_id=None, pad_token_id=None)
    return config.replace(**changes)


def matmul_peak_tflops(n: int, repeats: int) -> float:
    """Best bf16 [n, n] @ [n, n] throughput on the default device, in TFLOP/s."""
    a = jax.random.normal(jax.random.key(0), (n, n), jnp.bfloat16)
    f = jax.jit(lambda x, y: x @ y)
    f(a, a).block_until_ready()
    best = min(bench_sampler.timed(lambda: f(a, a).block_until_ready())
               for _ in range(max(repeats, 3)))
    return 2 * n ** 3 / best / 1e12


def hbm_bandwidth_gb_s(num_bytes: int, repeats: int) -> float:
    """Best copy throughput of a [num_bytes] uint8 array on the default device, in GB/s
    (bytes read + bytes written), the figure a decode step's roofline divides by."""
    x = jnp.zeros((num_bytes // 4,), jnp.float32)
    copy = jax.jit(lambda a: a + 1.0)  # a fused elementwise pass: one read, one write
    copy(x).block_until_ready()
    best = min(bench_sampler.timed(lambda: copy(x).block_until_ready())
               for _ in range(max(repeats, 3)))
    return 2 * num_bytes / best / 1e9


def decode_bytes_per_step(config, batch: int, cache_len: int) -> float:
    """Bytes a cached decode step reads: every weight once (compute dtype) and each row's
    whole K/V cache (2 · layers · kv_heads · head_dim · cache_len values)."""
    width = jnp.dtype(config.dtype).itemsize
    kv = 2 * config.num_layers * config.num_kv_heads * config.head_dim * cache_len * width
    return config.num_params() * width + batch * kv


def peak_memory_gib() -> float | None:
    """The default device's peak bytes in use so far (GPU/TPU), None where unreported."""
    stats = jax.devices()[0].memory_stats() or {}
    peak = stats.get("peak_bytes_in_use")
    return None if peak is None else peak / 2 ** 30


def hf_generate_on(model, prompts: np.ndarray, new_tokens: int, device) -> np.ndarray:
    """bench_sampler.hf_generate with the prompts on `device` (the model's)."""
    import torch
    input_ids = torch.from_numpy(prompts.astype(np.int64)).to(device)
    with torch.inference_mode():
        out = model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                             max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                             do_sample=False, eos_token_id=None, pad_token_id=0)
    return out[:, prompts.shape[1]:].cpu().numpy()


def sampler_part(args, bandwidth_gb_s: float | None) -> dict:
    import torch
    import transformers
    config = model_config("smollm2-135m", args.small)
    hf_device = "cuda" if torch.cuda.is_available() else "cpu"
    rng = np.random.default_rng(0)
    prompts = rng.integers(0, 256, (max(BATCHES), args.prompt_len)).astype(np.int32)
    with tempfile.TemporaryDirectory() as checkpoint:
        save_hf_checkpoint(Transformer(config, rngs=nnx.Rngs(0)), checkpoint)
        mtrl_model = load_hf_checkpoint(checkpoint)
        hf_model = transformers.AutoModelForCausalLM.from_pretrained(
            checkpoint, dtype=torch.bfloat16).to(hf_device).eval()
    hf_model.generation_config.eos_token_id = None
    cache_multiple = 64
    sampler = Sampler(mtrl_model, buckets=BucketPolicy(cache_multiple=cache_multiple))
    cache_len = -(-(args.prompt_len + args.new_tokens) // cache_multiple) * cache_multiple
    greedy = SamplingConfig(greedy=True, max_new_tokens=args.new_tokens)
    out = {"model": "smollm2-135m" + (" (small)" if args.small else ""),
           "num_params": config.num_params(), "dtype": config.dtype, "hf_device": hf_device,
           "prompt_len": args.prompt_len, "new_tokens": args.new_tokens,
           "cache_len": cache_len, "mtrl_tok_s": {}, "hf_tok_s": {}, "sampler_vs_hf": {},
           "greedy_token_agreement": {}, "decode_roofline_tok_s": {},
           "decode_roofline_fraction": {}}
    for batch in BATCHES:
        rows = prompts[:batch]
        as_lists = rows.tolist()
        mine = bench_sampler.mtrl_generate(sampler, as_lists, greedy)  # compiles
        theirs = hf_generate_on(hf_model, rows, args.new_tokens, hf_device)  # warm-up
        times = bench_sampler.interleaved_times({
            "mtrl": lambda: bench_sampler.mtrl_generate(sampler, as_lists, greedy),
            "hf": lambda: hf_generate_on(hf_model, rows, args.new_tokens, hf_device)},
            args.repeats)
        tokens = batch * args.new_tokens
        key = str(batch)
        out["mtrl_tok_s"][key] = tokens / statistics.median(times["mtrl"])
        out["hf_tok_s"][key] = tokens / statistics.median(times["hf"])
        out["sampler_vs_hf"][key] = out["mtrl_tok_s"][key] / out["hf_tok_s"][key]
        out["greedy_token_agreement"][key] = float(np.mean(mine == theirs))
        if bandwidth_gb_s:
            roof = batch * bandwidth_gb_s * 1e9 / decode_bytes_per_step(config, batch, cache_len)
            out["decode_roofline_tok_s"][key] = roof
            out["decode_roofline_fraction"][key] = out["mtrl_tok_s"][key] / roof
        print(f"sampler batch {batch}: mtrl {out['mtrl_tok_s'][key]:,.0f} tok/s, "
              f"HF ({hf_device}) {out['hf_tok_s'][key]:,.0f} tok/s", flush=True)
    out["mtrl_num_compiles"] = sampler.num_compiles
    out["peak_memory_gib"] = peak_memory_gib()
    return out


def train_part(args, name: str, peak_tflops: float | None) -> dict:
    """One shape: rows vs tree update time, and the tree update's useful-FLOP MFU."""
    config = model_config(name, args.small, dtype="bfloat16", param_dtype="float32")
    graphdef, params = nnx.split(Transformer(config, rngs=nnx.Rngs(0)))
    shape = dict(prompt=24, new=16, obs=8, length=256) if args.small else \
        dict(prompt=300, new=256, obs=40, length=2048)
    length = shape.pop("length")
    rows = bench_train_step.humaneval_rows(args.train_tasks, 1, length, **shape)
    n_params = bench_train_step.param_count(params)
    out = {"num_params": n_params, "dtype": config.dtype, "param_dtype": config.param_dtype,
           "attention": resolve_implementation(config.attention, config.compute_dtype,
                                               config.head_dim),
           "remat": args.remat, "tasks": args.train_tasks,
           "modes": {}}
    for mode in ("rows", "tree"):
        counts = bench_train_step.layout_counts(rows, mode, length)
        try:
            result = bench_train_step.bench_update(graphdef, params, rows, mode, length,
                                                   args.repeats, args.remat)
        except Exception as error:  # e.g. cuDNN refusing a mask: keep a number, say why
            traceback.print_exc()
            chunked, _ = nnx.split(Transformer(config.replace(attention="chunked"),
                                               rngs=nnx.Rngs(0)))
            result = bench_train_step.bench_update(chunked, params, rows, mode, length,
                                                   args.repeats, args.remat)
            result.update(attention="chunked",
                          attention_error=f"{type(error).__name__}: {error}"[:2000])
        result.update(counts, flops=bench_train_step.flops(config, n_params, counts),
                      peak_memory_gib=peak_memory_gib())
        out["modes"][mode] = result
        print(f"train {name} {mode}: {result['update_s']:.4f} s", flush=True)
    tree, packed = out["modes"]["tree"], out["modes"]["rows"]
    out["tree_vs_packed_time"] = packed["update_s"] / tree["update_s"]
    out["useful_tflops_per_s"] = tree["flops"]["useful"] / tree["update_s"] / 1e12
    if peak_tflops:
        out["train_mfu"] = out["useful_tflops_per_s"] / peak_tflops
    return out


def rl_step_part(args) -> dict:
    """The embedded default's step: rollout device time, environment, tree update."""
    rows, timing, _, (graphdef, params) = bench_train_step.default_tree_rows(
        seed=0, smoke=args.small)
    update = bench_train_step.bench_update(graphdef, params, rows, "tree", 0, args.repeats)
    step = timing["rollout_s"] + timing["env_s"] + update["update_s"]
    return {"rollout_s": timing["rollout_s"], "env_s": timing["env_s"],
            "update_s": update["update_s"], "step_s": step,
            "rollout_fraction": timing["rollout_s"] / step}


def run_part(result: dict, name: str, fn, save=lambda: None):
    """result[name] = fn(), or {"error": ...} (the run goes on to the next part); then
    save() writes the record so far."""
    started = time.perf_counter()
    try:
        result[name] = fn()
    except Exception as error:  # a record of what failed beats no record
        traceback.print_exc()
        result[name] = {"error": f"{type(error).__name__}: {error}"[:4000]}
    if isinstance(result[name], dict):
        result[name]["part_s"] = time.perf_counter() - started
    print(f"{name}: {time.perf_counter() - started:.1f} s", flush=True)
    save()
    return result[name]


def main(argv=None) -> pathlib.Path:
    args = parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    device = jax.devices()[0]
    result: dict = {
        "device": device_name(), "device_kind": device.device_kind,
        "platform": device.platform, "device_count": jax.device_count(), "small": args.small,
        "command": "python -m bench.gpu " + " ".join(argv if argv is not None
                                                     else sys.argv[1:]),
        "environment": {"jax": jax.__version__}}
    stamp = machine_stamp()
    path = pathlib.Path(args.out) / f"{result['device']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)

    def save():
        result["complete"] = done
        write_record(path, result, stamp)

    done = False
    peak = bandwidth = None
    if "matmul" not in skip:
        n = 256 if args.small else 8192
        part = run_part(result, "matmul", lambda: {"n": n, "dtype": "bfloat16",
                                                   "peak_tflops": matmul_peak_tflops(
                                                       n, args.repeats)}, save)
        peak = part.get("peak_tflops")
        result["bf16_peak_tflops"] = peak
    if "hbm" not in skip:
        size = 2 ** 24 if args.small else 2 ** 32
        part = run_part(result, "hbm", lambda: {"bytes": size, "bandwidth_gb_s":
                                                hbm_bandwidth_gb_s(size, args.repeats)}, save)
        bandwidth = part.get("bandwidth_gb_s")
        result["hbm_gb_s"] = bandwidth
    if "sampler" not in skip:
        part = run_part(result, "sampler", lambda: sampler_part(args, bandwidth))
        result["sampler_vs_hf_b64"] = part.get("sampler_vs_hf", {}).get("64")
        result["decode_roofline_fraction_b64"] = part.get(
            "decode_roofline_fraction", {}).get("64")
        save()
    if "train" not in skip:
        result["train"] = {}
        for name in filter(None, args.train_shapes.split(",")):
            run_part(result["train"], name, lambda name=name: train_part(args, name, peak))
            result["train_mfu"] = {shape: result["train"][shape].get("train_mfu")
                                   for shape in result["train"]}
            result["tree_vs_packed_time"] = result["train"][name].get("tree_vs_packed_time")
            save()
    if "rl_step" not in skip:
        run_part(result, "rl_step", lambda: rl_step_part(args), save)
    done = True
    save()
    print(json.dumps({k: v for k, v in result.items() if not isinstance(v, dict)
                      or k == "train_mfu"}, indent=2))
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()
