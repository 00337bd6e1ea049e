"""Environment throughput and method smoke table for the math and tool environments,
in one run (docs/design.md section 8).

    python -m bench.envs --out envs.json

1. env steps/s: MathEnv.step and ToolEnv.step (real sandbox, --workers) on GSM8K
   problems with a fixed mix of hand-written completions (math: correct, wrong,
   unanswered, 2 KB of garbage; tool: python calls with distinct code, answers,
   void turns), best of --repeats batched calls;
2. env share of an RL step: --share-steps trainer steps of experiments/configs/
   {math,tool}.py on the tiny preset (2 layers, as the configs), no SFT; the share is
   Σ time/env_s / Σ step_time_s over the steps after the first (compilation);
3. method smoke table: per environment, a short SFT warm start on the GSM8K worked
   solutions (--sft-steps; both environments accept its \\boxed{} answers), then one
   RL step from it per method: UFO (credit.estimator=ufo), IGPO (igpo: the trainer
   scores the truth), the SimpleTIR filter (grpo + filters.void_turns) and the reward
   recipe (grpo + reward.recipe=recipe). Reported per run: loss, mean reward, and the
   statistics of the advantages the trainer fed the loss (on loss tokens' rows).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import tempfile
import time

import numpy as np

from mtrl.evidence import timing
from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import machine_stamp
from mtrl.training.config import module_from_file

ROOT = pathlib.Path(__file__).resolve().parents[1]
METHODS = {
    "ufo": dict(credit=dict(estimator="ufo")),
    "igpo": dict(credit=dict(estimator="igpo")),
    "simpletir_filter": dict(credit=dict(estimator="grpo"), filters=dict(void_turns=True)),
    "reward_recipe": dict(credit=dict(estimator="grpo"), reward=dict(recipe="recipe")),
}


def load_config(name: str):
    return module_from_file(ROOT / "experiments" / "configs" / f"{name}.py").get_config()


def small(name: str, data: pathlib.Path, steps: int):
    """The experiment config with short runs: few tasks, T = 2, short completions."""
    c = load_config(name)
    c.data.path = str(data / "gsm8k")
    c.data.num_train, c.data.num_eval = 64, 2
    c.data.test_split = ""
    c.data.options = dict(max_question_chars=150)
    c.rollout.num_turns = 2
    c.rollout.max_new_tokens = 48
    c.rollout.max_context = 512 if name == "math" else 640
    if name == "tool":  # the math environment runs no sandbox
        c.env.workers = 1
    c.credit.estimator = "grpo"
    c.reward.recipe = "env"
    c.filters.void_turns = False
    c.train.steps = steps
    c.train.eval_interval = c.train.save_interval = max(steps, 1)
    c.train.num_transcripts = 1
    c.sft.enabled = False
    return c


def math_completions(tasks, n):
    kinds = []
    for i in range(n):
        task = tasks[i % len(tasks)]
        kinds.append([f"Work. The answer is \\boxed{{{task.answer}}}.",
                      f"{task.solution}\n#### {int(float(task.answer)) + 1}",
                      "I am not sure how to do this.",
                      "".join(chr(33 + (i * 7 + k) % 90) for k in range(2048))][i % 4])
    return kinds


def tool_completions(tasks, n):
    out = []
    for i in range(n):
        task = tasks[i % len(tasks)]
        out.append([f"```python\nprint(sum(range({i + 10})) * {i % 7})\n```",
                    f"```python\nx = [k * k for k in range({i + 5})]\nprint(x[-1])\n```",
                    f"So \\boxed{{{task.answer}}}", "thinking..."][i % 4])
    return out


def env_throughput(data: pathlib.Path, batch: int, tool_batch: int, repeats: int,
                   workers: int) -> dict:
    from mtrl.data.gsm8k import load_gsm8k
    from mtrl.envs.math import MathEnv, MathEnvConfig
    from mtrl.envs.sandbox import SandboxPool
    from mtrl.envs.tool import ToolEnv, ToolEnvConfig

    tasks = load_gsm8k(data / "gsm8k", "test")[:200]
    out = {}
    for mode in ("unary", "correctness"):
        env = MathEnv(MathEnvConfig(feedback_mode=mode))
        states = [env.reset(tasks[i % len(tasks)])[0] for i in range(batch)]
        actions = [(t,) for t in math_completions(tasks, batch)]
        best = min(_timed(lambda: env.step(states, actions, 1)) for _ in range(repeats))
        out[f"math_{mode}_steps_per_s"] = batch / best
    with SandboxPool(num_workers=workers) as pool:
        env = ToolEnv(ToolEnvConfig(max_turns=3), sandbox=pool)
        times = []
        for r in range(repeats):  # distinct code per repeat: no cached verdicts
            states = [env.reset(tasks[i % len(tasks)])[0] for i in range(tool_batch)]
            actions = [(t.replace("range(", f"range({r} + "),)
                       for t in tool_completions(tasks, tool_batch)]
            times.append(_timed(lambda: env.step(states, actions, 1)))
        out["tool_steps_per_s"] = tool_batch / min(times)
        out["tool_calls_per_batch"] = sum(1 for i in range(tool_batch) if i % 4 < 2)
    out.update(math_batch=batch, tool_batch=tool_batch, sandbox_workers=workers)
    return out


_timed = timing.wall_seconds


class AdvantageRecorder:
    """Wraps the trainer's advantage call to keep statistics of what it returns."""

    def __init__(self, fn):
        self.fn, self.stats = fn, []

    def __call__(self, credit, rollout, gamma, penalty=None):
        advantages = self.fn(credit, rollout, gamma, penalty)
        mask = np.asarray(rollout.batch.loss_mask)
        values = np.asarray(advantages)[mask]
        self.stats.append({"adv_mean": float(values.mean()) if values.size else 0.0,
                           "adv_std": float(values.std()) if values.size else 0.0,
                           "adv_min": float(values.min()) if values.size else 0.0,
                           "adv_max": float(values.max()) if values.size else 0.0,
                           "adv_nonzero_tokens": int((values != 0).sum()),
                           "loss_tokens": int(mask.sum())})
        return advantages


def run_trainer(config, workdir: pathlib.Path) -> tuple[list[dict], list[dict]]:
    import mtrl.training.advantages.stage as step_module  # the trainer's advantages stage
    import mtrl.training.loop.trainer as trainer_module
    recorder = AdvantageRecorder(step_module.token_advantages)
    step_module.token_advantages = recorder
    try:
        trainer = trainer_module.Trainer(config, workdir, show_progress=False)
        try:
            trainer.run()
        finally:
            trainer.close()
    finally:
        step_module.token_advantages = recorder.fn
    records = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
    return [r for r in records if "step_time_s" in r], recorder.stats


def env_share(data: pathlib.Path, steps: int, tmp: pathlib.Path) -> dict:
    out = {}
    for name in ("math", "tool"):
        records, _ = run_trainer(small(name, data, steps), tmp / f"share_{name}")
        later = records[1:] or records
        env_s = sum(r["time/env_s"] for r in later)
        step_s = sum(r["step_time_s"] for r in later)
        out[name] = {"env_share": env_s / step_s, "env_s_per_step": env_s / len(later),
                     "step_s": step_s / len(later), "steps_timed": len(later)}
    return out


def method_table(data: pathlib.Path, sft_steps: int, tmp: pathlib.Path) -> dict:
    out = {}
    for name in ("math", "tool"):
        warm = small(name, data, 0)
        warm.sft = dict(warm.sft.to_dict(), enabled=sft_steps > 0, steps=max(sft_steps, 1),
                        batch_size=8, max_len=warm.rollout.max_context, checkpoint_every=10_000)
        sft_dir = tmp / f"sft_{name}"
        t0 = time.perf_counter()
        run_trainer(warm, sft_dir)
        out[f"{name}_sft_s"] = time.perf_counter() - t0
        for method, overrides in METHODS.items():
            c = small(name, data, 1)
            c.train.init_from = str(sft_dir)
            for section, values in overrides.items():
                c[section].update(values)
            t0 = time.perf_counter()
            records, stats = run_trainer(c, tmp / f"{name}_{method}")
            r = records[0]
            out[f"{name}/{method}"] = {
                "loss": r.get("loss"), "reward_mean": r["reward_mean"],
                "skipped_update": bool(r.get("skipped_update", 0.0)),
                "train_rows": r["train_rows"], "wall_s": time.perf_counter() - t0, **stats[0]}
            print(name, method, json.dumps(out[f"{name}/{method}"]), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--tool-batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--share-steps", type=int, default=3)
    parser.add_argument("--sft-steps", type=int, default=60)
    parser.add_argument("--parts", default="envs,share,methods")
    args = parser.parse_args()
    data = pathlib.Path(args.data)
    parts = set(args.parts.split(","))
    stamp = machine_stamp()
    result = {"command": "python -m bench.envs " + " ".join(
        f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items())}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        if "envs" in parts:
            result["env_throughput"] = env_throughput(data, args.batch, args.tool_batch,
                                                      args.repeats, args.workers)
            print(json.dumps(result["env_throughput"]), flush=True)
        if "share" in parts:
            result["env_share"] = env_share(data, args.share_steps, tmp)
            print(json.dumps(result["env_share"]), flush=True)
        if "methods" in parts:
            result["methods"] = method_table(data, args.sft_steps, tmp)
    print(json.dumps(write_record(args.out, result, stamp), indent=2))


if __name__ == "__main__":
    main()
