"""A whole SmolLM2-135M RL step through the trainer (rollout, sandbox, update), float32
on XLA beside bfloat16 on the CPU's bf16 units and bf16 + LoRA, in one run (the
goal: 40 completions x 128 tokens <= 30 s).

    python -m bench.smollm2_step --out smollm2_step.json [--steps 4] [--arms f32,bf16]

The run: experiments/configs/smollm2_mbpp.py (multi-turn MBPP, 2 tasks x G = 4 x T = 2 =
40 completions of at most 128 new tokens a step, tree packing, full remat, PPO + KL to
the base), no SFT, every train task (no band file), --steps RL steps, no test split
and a 2-task validation at the last step only; every step updates (dynamic sampling
off, so no arm skips its update on a flat step). Arms differ only in:
  f32        model.dtype float32: XLA's float32 matmuls (the issue's baseline)
  bf16       model.dtype bfloat16: float32 master weights, bf16 products; matmul "auto"
             picks the oneDNN kernel on a CPU with AMX (printed by the trainer) and XLA
             elsewhere
  bf16_lora  bf16 plus lora.rank 16 (alpha 32, all projections)
  bf16_einsum  bf16 with decode_attention "einsum" (XLA's grouped einsum over every
             cache slot) instead of the fused CPU kernel that "auto" picks
The arms' rollouts differ (different numerics sample different tokens), so tokens
generated per step are reported beside the times. Per arm: bench.rl_step's summary
(median over steps 3..steps-1, and over the steps that compiled nothing new), wall
seconds, the load average around it.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import tempfile
import time

from bench import rl_step as bench_rl_step  # run() and summarize()
from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import load_average, machine_stamp
from mtrl.training.config import module_from_file

ROOT = pathlib.Path(__file__).resolve().parents[1]
ARMS = {
    "f32": {"model.dtype": "float32"},
    "bf16": {"model.dtype": "bfloat16"},
    "bf16_lora": {"model.dtype": "bfloat16", "lora.rank": 16, "lora.alpha": 32.0},
    "bf16_einsum": {"model.dtype": "bfloat16", "model.overrides": {"decode_attention": "einsum"}},
}


def arm_config(name: str, steps: int, checkpoint: str):
    c = module_from_file(ROOT / "experiments/configs/smollm2_mbpp.py").get_config()
    c.model.hf_checkpoint = checkpoint
    c.data.options = {"train_ids_file": ""}
    c.data.num_eval, c.data.test_split = 2, ""
    c.train.steps = steps
    c.train.eval_interval = c.train.save_interval = steps
    c.train.eval_samples = 0
    c.train.export_best = False
    c.train.drop_zero_advantage = False
    c.train.budget_minutes = 0.0
    for key, value in ARMS[name].items():
        section, field = key.split(".")
        c[section][field] = value
    return c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--checkpoint", default=str(ROOT / "models/smollm2-135m-instruct"))
    parser.add_argument("--workdir-root", default="")
    args = parser.parse_args()
    names = args.arms.split(",")
    unknown = sorted(set(names) - set(ARMS))
    if unknown:
        parser.error(f"unknown arms {unknown}; known: {sorted(ARMS)}")
    if not (pathlib.Path(args.checkpoint) / "config.json").exists():
        parser.error(f"no checkpoint at {args.checkpoint}: python -m tools.get_smollm2 --out ...")
    root = pathlib.Path(args.workdir_root or tempfile.mkdtemp(prefix="bench_smollm2_step_"))
    stamp = machine_stamp()
    result = {"command": "python -m bench.smollm2_step " + " ".join(
                  f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v != ""),
              "arms": {}}
    for name in names:
        started, load = time.perf_counter(), load_average()
        records = bench_rl_step.run(arm_config(name, args.steps, args.checkpoint), root / name)
        summary = bench_rl_step.summarize(records, args.steps)
        summary.update(
            wall_s=time.perf_counter() - started, load_before=load, load_after=load_average(),
            per_step=[{k: r.get(k) for k in ("step", "step_time_s", "time/rollout_s",
                                            "time/env_s", "time/update_s",
                                            "rollout/generated_tokens", "train_step_compiles",
                                            "sampler_compiles")} for r in records])
        tokens = [r["rollout/generated_tokens"] for r in records[2:] or records]
        summary["median_generated_tokens"] = statistics.median(tokens)
        result["arms"][name] = summary
        print(name, json.dumps({k: v for k, v in summary.items() if k != "per_step"}),
              flush=True)
        # Written after every arm: a stopped run keeps the arms it finished.
        write_record(args.out, result, stamp)


if __name__ == "__main__":
    main()
