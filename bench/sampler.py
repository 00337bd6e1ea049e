"""Sampler throughput: mtrl's jitted KV-cache sampler vs transformers' `generate`.

Both sides load the same safetensors checkpoint (a randomly initialised Qwen2-style
model, preset 'qwen2-3m', written once with mtrl.models.save_hf_checkpoint) and generate
exactly --new-tokens tokens per row from --prompt-len-token prompts (no stop token:
eos is disabled on both sides), greedy on both sides for the batch-size sweep.

Throughput = generated tokens / wall time of one whole generate call (prefill included,
on both sides), median over --repeats timed calls after a warm-up call; mtrl and HF calls
alternate so that load from other processes falls on both alike. mtrl's first call
compiles; its compile time (first call minus the median) is reported separately and
excluded from throughput. Same weights and greedy decoding: the fraction of identical
tokens (`greedy_token_agreement`) checks that both sides run the same model.

The fan-out case draws --fanout-g samples (temperature 1) from each of --fanout-prompts
prompts, once with one prefill per prompt shared by its samples and once prefilling
every sample's copy of the prompt; fanout_speedup = unshared time / shared time.

  python -m bench.sampler --out /tmp/bench_sampler.json

  python -m bench.sampler --threads 1 --out /tmp/bench_sampler_1t.json

--threads N runs both libraries on N threads (for N = 1 XLA's Eigen and intra-op pools
are made single-threaded; OMP_NUM_THREADS=N for mtrl's OpenMP kernels, set by restarting
the script). By default each library picks its own; on a loaded machine
torch's 2 OpenMP threads can spin at barriers while the other core is taken, which made
HF many times slower than with 1 thread, so report both runs.

The machines are shared and noisy: compare the ratios of one run, not absolute numbers
across runs (docs/design.md section 8); the JSON's stamp records the load averages.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time

import jax
import numpy as np
import torch
import transformers
from flax import nnx

from bench.workers import restart
from mtrl.evidence import timing
from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import machine_stamp
from mtrl.models import (Transformer, load_hf_checkpoint, preset,
                         save_hf_checkpoint)
from mtrl.sampling import BucketPolicy, SamplingConfig
from mtrl.sampling import Sampler


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="JSON results file")
    parser.add_argument("--preset", default="qwen2-3m")
    parser.add_argument("--prompt-len", type=int, default=64)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--batches", default="1,16,64", help="comma-separated batch sizes")
    parser.add_argument("--fanout-prompts", type=int, default=16)
    parser.add_argument("--fanout-g", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--hf-dtype", choices=("float32", "bfloat16"), default="float32",
                        help="transformers' parameter and compute dtype (mtrl runs the "
                             "preset's own)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch.set_num_threads (default: torch's own choice)")
    parser.add_argument("--threads", type=int, default=None,
                        help="run both sides on this many threads: torch.set_num_threads, and "
                             "for 1 single-threaded XLA CPU (Eigen and intra-op pools); XLA "
                             "otherwise uses every core (default: each library's own choice)")
    return parser.parse_args()


timed = timing.wall_seconds  # bench.gpu calls it as bench.sampler.timed


def interleaved_times(fns: dict, repeats: int) -> dict[str, list[float]]:
    """Wall times of each fn, calls alternating (a, b, a, b, ...) so that load from other
    processes on a shared machine falls on both sides alike."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            times[name].append(timed(fn))
    return times


def mtrl_generate(sampler: Sampler, prompts: list[list[int]], config: SamplingConfig,
                  num_samples: int = 1, share_prefix: bool = True) -> np.ndarray:
    gen = sampler.generate(prompts, jax.random.key(0), config, num_samples=num_samples,
                           share_prefix=share_prefix)
    return np.asarray(jax.block_until_ready(gen.output.tokens))


def hf_generate(model, prompts: np.ndarray, new_tokens: int) -> np.ndarray:
    input_ids = torch.from_numpy(prompts.astype(np.int64))
    with torch.inference_mode():
        out = model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                             max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                             do_sample=False, eos_token_id=None, pad_token_id=0)
    generated = out[:, prompts.shape[1]:].numpy()
    if generated.shape[1] != new_tokens:
        raise RuntimeError(f"HF generated {generated.shape[1]} tokens, expected {new_tokens}")
    return generated


def main() -> None:
    args = parse_args()
    if args.threads is not None and os.environ.get("OMP_NUM_THREADS") != str(args.threads):
        # mtrl's CPU kernels (oneDNN, decode attention) run on OpenMP threads, whose
        # count libgomp reads once at load (torch's import loads it): restart with it set.
        restart("bench.sampler", OMP_NUM_THREADS=str(args.threads))
    if args.threads is not None:
        args.torch_threads = args.threads
        if args.threads == 1:
            # Read when the XLA backend starts (first computation), so setting it here,
            # after `import jax` but before any array op, takes effect.
            os.environ["XLA_FLAGS"] = " ".join([
                os.environ.get("XLA_FLAGS", ""), "--xla_cpu_multi_thread_eigen=false",
                "intra_op_parallelism_threads=1"]).strip()
    stamp = machine_stamp()
    batches = [int(b) for b in args.batches.split(",")]
    if args.torch_threads is not None:
        torch.set_num_threads(args.torch_threads)
    rng = np.random.default_rng(args.seed)
    config = preset(args.preset)
    # Prompts are plain byte ids (never pad / bos / eos).
    max_batch = max(batches + [args.fanout_prompts])
    all_prompts = rng.integers(0, 256, (max_batch, args.prompt_len)).astype(np.int32)

    with tempfile.TemporaryDirectory() as checkpoint:
        save_hf_checkpoint(Transformer(config, rngs=nnx.Rngs(args.seed)), checkpoint)
        mtrl_model = load_hf_checkpoint(checkpoint)
        hf_model = transformers.AutoModelForCausalLM.from_pretrained(
            checkpoint, dtype=getattr(torch, args.hf_dtype)).eval()
    hf_model.generation_config.eos_token_id = None

    # Cache buckets of 64 slots: prompt 64 + 128 new tokens fills 192 slots exactly.
    sampler = Sampler(mtrl_model, buckets=BucketPolicy(cache_multiple=64))
    greedy = SamplingConfig(greedy=True, max_new_tokens=args.new_tokens)
    results: dict = {
        "preset": args.preset, "num_params": config.num_params(),
        "prompt_len": args.prompt_len, "new_tokens": args.new_tokens,
        "repeats": args.repeats, "decoding": "greedy (batch sweep), temperature 1 (fan-out)",
        "mtrl_dtype": f"params {mtrl_model.config.param_dtype}, compute {mtrl_model.config.dtype}",
        "hf_dtype": args.hf_dtype,
        "mtrl_tok_s": {}, "hf_tok_s": {}, "mtrl_compile_s": {}, "ratio": {},
        "mtrl_times_s": {}, "hf_times_s": {}, "greedy_token_agreement": {},
    }
    rows = []
    for batch in batches:
        prompts = all_prompts[:batch]
        prompt_lists = prompts.tolist()
        start = time.perf_counter()
        mtrl_tokens = mtrl_generate(sampler, prompt_lists, greedy)  # compiles
        first_call = time.perf_counter() - start
        hf_tokens = hf_generate(hf_model, prompts, args.new_tokens)  # warm-up
        times = interleaved_times({
            "mtrl": lambda: mtrl_generate(sampler, prompt_lists, greedy),
            "hf": lambda: hf_generate(hf_model, prompts, args.new_tokens)}, args.repeats)
        mtrl_times, hf_times = times["mtrl"], times["hf"]
        mtrl_s, hf_s = statistics.median(mtrl_times), statistics.median(hf_times)
        tokens = batch * args.new_tokens
        key = str(batch)
        results["mtrl_tok_s"][key] = tokens / mtrl_s
        results["hf_tok_s"][key] = tokens / hf_s
        results["ratio"][key] = hf_s / mtrl_s
        results["mtrl_compile_s"][key] = max(first_call - mtrl_s, 0.0)
        results["mtrl_times_s"][key] = mtrl_times
        results["hf_times_s"][key] = hf_times
        # Same weights, greedy: the sequences agree until float round-off flips a near-tie.
        results["greedy_token_agreement"][key] = float(np.mean(mtrl_tokens == hf_tokens))
        rows.append((f"batch {batch}", tokens / mtrl_s, tokens / hf_s, hf_s / mtrl_s,
                     results["mtrl_compile_s"][key]))
        print(f"batch {batch}: mtrl {tokens / mtrl_s:,.0f} tok/s, HF {tokens / hf_s:,.0f} tok/s",
              flush=True)

    fan_prompts = all_prompts[: args.fanout_prompts].tolist()
    sample = SamplingConfig(max_new_tokens=args.new_tokens)
    runs = {name: (lambda share=share: mtrl_generate(sampler, fan_prompts, sample,
                                                     args.fanout_g, share))
            for name, share in (("shared", True), ("unshared", False))}
    first_calls = {name: timed(run) for name, run in runs.items()}
    fanout = {}
    for name, times in interleaved_times(runs, args.repeats).items():
        seconds = statistics.median(times)
        fanout[name] = {"seconds": seconds, "times_s": times,
                        "tok_s": args.fanout_prompts * args.fanout_g * args.new_tokens / seconds,
                        "compile_s": max(first_calls[name] - seconds, 0.0)}
    results["fanout"] = fanout
    results["fanout_speedup"] = fanout["unshared"]["seconds"] / fanout["shared"]["seconds"]
    results["ratio_b64"] = results["ratio"].get("64")
    results["mtrl_num_compiles"] = sampler.num_compiles
    results["environment"] = {
        "jax": jax.__version__, "torch": torch.__version__,
        "transformers": transformers.__version__, "torch_threads": torch.get_num_threads(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "cpu_count": os.cpu_count(), "jax_devices": [str(d) for d in jax.devices()],
        "machine": platform.machine(), "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }

    print()
    print(f"{args.preset} ({config.num_params() / 1e6:.2f}M params), prompt {args.prompt_len}, "
          f"{args.new_tokens} new tokens, median of {args.repeats}")
    print(f"{'case':<24}{'mtrl tok/s':>12}{'HF tok/s':>12}{'mtrl/HF':>10}{'compile s':>11}")
    for name, mtrl_rate, hf_rate, ratio, compile_s in rows:
        print(f"{name:<24}{mtrl_rate:>12,.0f}{hf_rate:>12,.0f}{ratio:>10.2f}{compile_s:>11.2f}")
    rows_fan = args.fanout_prompts * args.fanout_g
    for name in ("shared", "unshared"):
        label = f"fan-out {args.fanout_prompts}x{args.fanout_g} {name}"
        print(f"{label:<24}{fanout[name]['tok_s']:>12,.0f}{'-':>12}{'-':>10}"
              f"{fanout[name]['compile_s']:>11.2f}")
    print(f"fan-out speedup (shared prefill vs not, {rows_fan} rows): "
          f"{results['fanout_speedup']:.2f}x")
    if results["ratio_b64"] is not None:
        print(f"ratio_b64 (mtrl/HF at batch 64): {results['ratio_b64']:.2f}")
    write_record(args.out, results, stamp)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
