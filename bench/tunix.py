"""mtrl beside Tunix 0.1.7 on the same SmolLM2-135M shapes: one update and greedy decode, paired.

    python -m bench.tunix --out /tmp/tunix.json --tunix-python /work/venv-tunix/bin/python \
        [--layers 4 --repeats 3 --batches 1,8,32]

Two modes of one script:

  default   runs in mtrl's venv: mtrl's arms (`f32`, `bf16_onednn`; the arms and helpers
            of bench/update_bf16.py and bench/decode.py) and starts `--worker` under
            --tunix-python as a subprocess that keeps its compiled programs
            (bench/workers.py); the timed calls of every side alternate, round by round.
  --worker  runs in Tunix's own venv (google-tunix 0.1.7 on the same jax 0.10.2; mtrl is
            not imported there): reads one JSON request a line on stdin and answers one
            `RESULT {...}` line on stdout.

Same shapes on both sides: SmolLM2-135M (30 layers, or --layers; d 576, MLP 1536, 9 heads
/ 3 KV heads of 64, vocabulary 49,152, tied embeddings, rope theta 100,000), random
weights, float32 parameters and compute, no remat.

  update  one policy-gradient step with AdamW (clip 1.0, lr 1e-5) over --rows x --length
          tokens, the first quarter prompt: mtrl's MAGRPO train step (bench.update_bf16);
          Tunix's `algo_core.grpo_loss_fn` (beta 0, no reference model) under
          `nnx.value_and_grad` and `nnx.Optimizer` in one `nnx.jit`, the step Tunix's
          trainer runs. Compile = the first call.
  decode  greedy, --prompt-len-token prompts, --new-tokens tokens per row with no stop
          token, batch 1, 8, 32: mtrl's `Sampler.generate`; Tunix's `Sampler.__call__`
          (prefill + decode loop; its tokenizer here maps space-separated ids, the EOS id
          is outside the vocabulary so every row decodes all tokens).

Tunix 0.1.7's Llama attention calls `apply_rope` without the config's `rope_theta`, so its
default (1,000,000) applies whatever the config says; the worker sets that default to
the model's 100,000 (recorded as `rope_theta_patch` in the JSON). Each call records wall
seconds, the process's CPU seconds (user + system, measured inside the process that did
the work) and the 1-minute load average; medians over --repeats rounds are reported.
"""

from __future__ import annotations

import json
import os
import statistics
import sys

# Top-level imports stay standard library only: the Tunix worker imports this module in
# Tunix's venv, where mtrl is not installed (workers and timing import nothing else).
from bench.workers import WorkerClient, parse_sides, reply, side_by_side_parser
from mtrl.evidence.timing import timed as timed_call

SHAPE = dict(vocab_size=49152, embed_dim=576, hidden_dim=1536, num_heads=9, num_kv_heads=3,
             head_dim=64, rope_theta=100_000, norm_eps=1e-5)
MTRL_ARMS = ("f32", "bf16_onednn")


def timed(fn) -> dict:
    """Runs fn() once: mtrl.evidence.timing's record with fn's own numbers (a dict or None)."""
    extra, record = timed_call(fn)
    return {**record, **(extra or {})}


def prompt_ids(batch: int, length: int, vocab: int, seed: int = 0) -> list[list[int]]:
    """Random prompts avoiding ids 0-2 (pad, EOS, BOS on the Tunix side)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    return [[int(t) for t in rng.integers(3, vocab, length)] for _ in range(batch)]


# ----------------------------------------------------------------- Tunix worker (its venv)

class IdTokenizer:
    """Tunix's tokenizer protocol over space-separated token ids (no vocabulary file)."""

    def encode(self, text: str, **_) -> list[int]:
        return [int(t) for t in text.split()]

    def decode(self, ids, **_) -> str:
        return " ".join(str(int(i)) for i in ids)

    def bos_id(self) -> int:
        return 0  # falsy: Tunix prepends no BOS

    def eos_id(self) -> int:
        return 1

    def pad_id(self) -> int:
        return 0


def tunix_llama(layers: int):
    """Tunix's Llama3 at SmolLM2's shape with random float32 weights, rope theta patched
    (module docstring): (model, info for the JSON)."""
    import jax
    from flax import nnx
    from tunix.models.llama3 import model as llama3

    default = llama3.apply_rope.__defaults__
    llama3.apply_rope.__defaults__ = (SHAPE["rope_theta"],)
    info = {"rope_theta_patch": {"apply_rope_default_before": default[0],
                                 "after": SHAPE["rope_theta"]}, "jax": jax.__version__}
    config = llama3.ModelConfig(num_layers=layers, weight_tying=True, **SHAPE)
    model = llama3.Llama3(config, rngs=nnx.Rngs(0))
    info["params"] = int(sum(x.size for x in jax.tree.leaves(nnx.state(model, nnx.Param))))
    return model, info


class TunixSide:
    """Tunix's Llama3 at SmolLM2's shape, its GRPO loss step and its sampler."""

    def __init__(self, layers: int, rows: int, length: int, prompt_len: int, new_tokens: int):
        import jax.numpy as jnp
        import numpy as np
        import optax
        from flax import nnx
        from tunix.generate import sampler as sampler_lib
        from tunix.rl import algo_core, common
        from tunix.rl.grpo.grpo_learner import GRPOConfig

        self.model, self.info = tunix_llama(layers)
        algo = GRPOConfig(beta=0.0, num_generations=2)
        algo.temperature = 1.0  # GRPOLearner sets this from its rollout config
        self.optimizer = nnx.Optimizer(
            self.model, optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-5)),
            wrt=nnx.Param)

        @nnx.jit
        def train_step(model, optimizer, example):
            def loss_fn(m):
                return algo_core.grpo_loss_fn(m, example, algo, pad_id=0, eos_id=1)[0]
            loss, grads = nnx.value_and_grad(loss_fn)(model)
            optimizer.update(model, grads)
            return loss

        rng = np.random.default_rng(0)
        tokens = rng.integers(3, SHAPE["vocab_size"], (rows, length)).astype(np.int32)
        split = length // 4
        ones = jnp.ones((rows, length - split), jnp.int32)
        self.example = common.TrainExample(
            prompt_ids=jnp.asarray(tokens[:, :split]), prompt_mask=jnp.ones((rows, split), jnp.int32),
            completion_ids=jnp.asarray(tokens[:, split:]), completion_mask=ones,
            advantages=jnp.asarray((rng.normal(size=rows) + 0.1).astype(np.float32)),
            ref_per_token_logps=None, old_per_token_logps=None)
        self.train_step = train_step
        self.sampler = sampler_lib.Sampler(
            self.model, IdTokenizer(), sampler_lib.CacheConfig(
                cache_size=prompt_len + new_tokens, num_layers=layers,
                num_kv_heads=SHAPE["num_kv_heads"], head_dim=SHAPE["head_dim"]))
        self.prompt_len, self.new_tokens = prompt_len, new_tokens

    def update(self) -> dict:
        loss = self.train_step(self.model, self.optimizer, self.example)
        return {"loss": float(loss)}

    def decode(self, batch: int) -> dict:
        prompts = [" ".join(map(str, p))
                   for p in prompt_ids(batch, self.prompt_len, SHAPE["vocab_size"])]
        out = self.sampler(prompts, max_generation_steps=self.new_tokens,
                           max_prompt_length=self.prompt_len,
                           eos_tokens=[SHAPE["vocab_size"]])
        return {"new_tokens": sum(len(t) for t in out.tokens), "first_row": list(map(int, out.tokens[0]))}


def worker(args) -> None:
    side = TunixSide(args.layers or 30, args.rows, args.length, args.prompt_len, args.new_tokens)
    reply(side.info)
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "update":
            reply(timed(side.update))
        elif request["op"] == "decode":
            reply(timed(lambda: side.decode(request["batch"])))
        else:
            raise ValueError(f"unknown op {request['op']!r}")


# ----------------------------------------------------------------- mtrl side (mtrl's venv)

class MtrlSide:
    """One mtrl numerics arm: the update of bench.update_bf16 and the sampler of bench.decode."""

    def __init__(self, arm: str, base, batch, prompt_len: int, new_tokens: int):
        import jax
        from flax import nnx

        from bench import decode as bench_decode
        from bench import update_bf16 as bench_update_bf16
        from mtrl.models import Transformer
        from mtrl.sampling import Sampler, SamplingConfig

        self.update_arm = bench_update_bf16.build_arm(
            base.replace(**bench_update_bf16.ARMS[arm]), batch)
        self.batch, self.timed_update = batch, bench_update_bf16.timed_call
        self.sampler = Sampler(Transformer(base.replace(**bench_decode.ARMS[arm]),
                                           rngs=nnx.Rngs(0)))
        self.config = SamplingConfig(greedy=True, max_new_tokens=new_tokens, pad_id=0)
        self.prompt_len, self.vocab, self.key = prompt_len, base.vocab_size, jax.random.key(0)

    def update(self) -> dict:
        return self.timed_update(self.update_arm, self.batch)

    def decode(self, batch: int) -> dict:
        prompts = prompt_ids(batch, self.prompt_len, self.vocab)

        def run():
            out = self.sampler.generate(prompts, self.key, self.config).output
            out.tokens.block_until_ready()
            return {"first_row": [int(t) for t in out.tokens[0]]}
        return timed(run)


def summarize(calls: list[dict], tokens: int) -> dict:
    wall = statistics.median(c["wall_s"] for c in calls)
    cpu = statistics.median(c["cpu_s"] for c in calls)
    return {"wall_s": wall, "cpu_s": cpu, "tok_s": tokens / wall, "tok_per_cpu_s": tokens / cpu,
            "calls": calls}


def main() -> None:
    parser = side_by_side_parser(__doc__)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--length", type=int, default=192)
    parser.add_argument("--prompt-len", type=int, default=64)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--batches", default="1,8,32")
    parser.add_argument("--arms", default=",".join(MTRL_ARMS))
    args = parse_sides(parser)
    if args.worker:
        return worker(args)
    import jax

    from bench import update_bf16 as bench_update_bf16
    from mtrl.evidence.bench_record import write_record
    from mtrl.evidence.stamp import machine_stamp
    from mtrl.kernels import onednn_matmul
    from mtrl.models import preset

    stamp = machine_stamp()
    base = preset("smollm2-135m", param_dtype="float32",
                  **({"num_layers": args.layers} if args.layers else {}))
    for field in ("vocab_size", "num_heads", "num_kv_heads", "head_dim"):
        assert getattr(base, field) == SHAPE[field], (field, getattr(base, field))
    batch = bench_update_bf16.rows_for(args.rows, args.length, base.vocab_size)
    batches = [int(b) for b in args.batches.split(",")]
    result = {"config": {"layers": base.num_layers, "rows": args.rows, "length": args.length,
                         "prompt_len": args.prompt_len, "new_tokens": args.new_tokens,
                         "batches": batches, "jax": jax.__version__, "threads": os.cpu_count(),
                         "rope_theta": base.rope_theta, "command": " ".join(sys.argv)},
              "skipped": {}, "compile_s": {}}
    sides = {}
    for arm in args.arms.split(","):
        if arm == "bf16_onednn" and not onednn_matmul.usable():
            result["skipped"][arm] = onednn_matmul.unusable_reason()
            continue
        sides[f"mtrl_{arm}"] = side = MtrlSide(arm, base, batch, args.prompt_len, args.new_tokens)
        result["compile_s"][f"mtrl_{arm}/update"] = side.update_arm["compile_s"]
        result[f"mtrl_{arm}_params"] = side.update_arm["params"]
    tunix = WorkerClient(args.tunix_python, "bench.tunix", [
        "--worker", "--layers", str(args.layers), "--rows", str(args.rows), "--length",
        str(args.length), "--prompt-len", str(args.prompt_len), "--new-tokens",
        str(args.new_tokens)])
    result["tunix"] = tunix.info
    result["compile_s"]["tunix/update"] = tunix.call(op="update")["wall_s"]
    for b in batches:  # first calls compile (the sampler programs of both sides)
        result["compile_s"][f"tunix/decode{b}"] = tunix.call(op="decode", batch=b)["wall_s"]
        for name, side in sides.items():
            result["compile_s"][f"{name}/decode{b}"] = side.decode(b)["wall_s"]
    print("compiled:", json.dumps(result["compile_s"]), flush=True)
    names = list(sides) + ["tunix"]
    calls = {(n, op): [] for n in names for op in ["update"] + [f"decode{b}" for b in batches]}
    for r in range(args.repeats):
        for name in (names if r % 2 == 0 else names[::-1]):
            do = (lambda op, **kw: tunix.call(op=op, **kw)) if name == "tunix" else (
                lambda op, side=sides.get(name), **kw: getattr(side, op)(**kw))
            calls[(name, "update")].append(do("update"))
            for b in batches:
                calls[(name, f"decode{b}")].append(do("decode", batch=b))
            print(f"round {r} {name}: update cpu {calls[(name, 'update')][-1]['cpu_s']:.2f} s, load "
                  f"{calls[(name, 'update')][-1]['load1']:.1f}", flush=True)
    tunix.close()
    result["sides"] = {}
    for name in names:
        row = {"update": summarize(calls[(name, "update")], args.rows * args.length)}
        for b in batches:
            row[f"decode{b}"] = summarize(calls[(name, f"decode{b}")], b * args.new_tokens)
        result["sides"][name] = row
    result["ratios_vs_tunix_cpu"] = {
        name: {op: result["sides"]["tunix"][op]["cpu_s"] / result["sides"][name][op]["cpu_s"]
               for op in result["sides"][name]} for name in sides}
    for name in names:
        row = result["sides"][name]
        print(f"{name:>17}: update {row['update']['wall_s']:.2f} s wall, {row['update']['cpu_s']:.2f}"
              " CPU s; decode tok per CPU s " + ", ".join(
                  f"b{b} {row[f'decode{b}']['tok_per_cpu_s']:.1f}" for b in batches), flush=True)
    print("vs Tunix (CPU s ratio):", json.dumps(result["ratios_vs_tunix_cpu"]))
    write_record(args.out, result, stamp)


if __name__ == "__main__":
    main()
