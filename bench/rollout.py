"""Tree rollouts with KV reuse and prefix sharing vs a naive baseline that re-encodes
every branch's full history each turn, in one run (docs/design.md section 8).

    python -m bench.rollout --out rollout.json
    python -m bench.rollout --smoke --out /tmp/rollout_smoke.json   # CI's form

Setup: T=2, G=4, N=2, align, --tasks code tasks, the `tiny` preset with random
weights, the code environment with `plain` feedback (a fixed instruction; the sandbox
still scores every joint action). Both generators are warmed up once (compilation is
reported separately as `compiles`), then timed on the same keys. Also measured: the
same tree in cross mode, and the generation saved by early termination when half of
the tasks are made to score above the threshold (an environment wrapper adds +1 to
every reward of even-numbered tasks, so exactly those nodes stop).
"""

from __future__ import annotations

import argparse
import json

import jax
from flax import nnx

from mtrl.evidence import timing
from mtrl.evidence.bench_record import write_record
from mtrl.evidence.stamp import machine_stamp
from mtrl.rollout.environment import Environment
from mtrl.envs.code import CodeEnv, CodeEnvConfig
from mtrl.envs.code.task import CodeTask
from mtrl.envs.sandbox import SandboxPool
from mtrl.models import PRESETS, Transformer
from mtrl.rollout import RolloutConfig, rollout
from mtrl.rollout.sampler_backend import NaiveBackend, SamplerBackend
from mtrl.sampling.sampler import Sampler
from mtrl.tokenizers import ByteTokenizer


def make_tasks(n: int) -> list[CodeTask]:
    return [CodeTask(task_id=f"bench/{i}", entry_point="f",
                     prompt=f"Write f(x) that returns x * {i % 7 + 2} + {i}.",
                     tests=tuple(f"assert f({x}) == {x * (i % 7 + 2) + i}" for x in (1, 2, 3)))
            for i in range(n)]


class HalfSolved(Environment):
    """Adds +1 to every reward of even-numbered tasks (so exactly they terminate)."""

    def __init__(self, env: Environment):
        self.env, self.num_agents = env, env.num_agents

    def reset(self, task):
        return self.env.reset(task)

    def step(self, states, actions, turn):
        out = self.env.step(states, actions, turn)
        return [r.__class__(**{**r.__dict__, "reward": r.reward + (
            1.0 if int(s.task.task_id.split("/")[1]) % 2 == 0 else 0.0)})
                for s, r in zip(states, out)]


def timed_rollout(tasks, env, backend, tokenizer, config, key):
    # Process CPU seconds beside wall (mtrl.evidence.timing): on a shared machine the wall
    # time grows with other jobs' load, the CPU time of the same work much less.
    tree, record = timing.timed(lambda: rollout(tasks, env, backend, tokenizer, config, key))
    m = tree.metrics
    return {**record, "device_s": m["rollout/device_seconds"],
            "env_s": m["rollout/env_seconds"], "tokens": m["rollout/generated_tokens"],
            "nodes": [int(m[f"rollout/turn{t}_nodes"]) for t in (1, 2)
                      if f"rollout/turn{t}_nodes" in m]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    # 32 tasks OOM-kill the naive baseline on a 24 GB machine (BENCHMARKS.md).
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--smoke", action="store_true",
                        help="2 tasks, 8 new tokens, 1 repeat, a 1-layer model: every arm "
                             "in seconds (CI runs it; no timing is asserted)")
    args = parser.parse_args()
    if args.smoke:
        args.tasks, args.max_new_tokens, args.repeats = 2, 8, 1
    stamp = machine_stamp()

    tokenizer = ByteTokenizer()
    model_config = PRESETS.get(args.preset)
    if args.smoke:  # one layer: the sampler's programs compile in a fraction of the time
        model_config = model_config.replace(num_layers=1)
    models = [Transformer(model_config, rngs=nnx.Rngs(s)) for s in (0, 1)]
    states = [nnx.split(m)[1] for m in models]
    tasks = make_tasks(args.tasks)
    base = RolloutConfig(num_turns=2, num_generations=4, num_agents=2, joint_mode="align",
                         max_new_tokens=args.max_new_tokens, max_context=1024)
    sampling = base.sampling_config(stop_token_ids=(tokenizer.eos_id,), pad_id=tokenizer.pad_id)
    sampler, naive_sampler = Sampler(models[0]), Sampler(models[0])
    results = {}
    with SandboxPool() as pool:
        env = CodeEnv(CodeEnvConfig(num_agents=2, feedback_mode="plain"), sandbox=pool)

        def run(name, backend, config, environment=env):
            timed_rollout(tasks, environment, backend, tokenizer, config, jax.random.key(99))
            runs = [timed_rollout(tasks, environment, backend, tokenizer, config,
                                  jax.random.key(r)) for r in range(args.repeats)]
            best = min(runs, key=lambda r: r["device_s"])
            best["tok_s"] = best["tokens"] / best["device_s"]
            results[name] = best
            print(f"{name:>18}: {best['tok_s']:9.0f} tok/s  device {best['device_s']:.2f}s  "
                  f"cpu {best['cpu_s']:.2f}s  "
                  f"env {best['env_s']:.2f}s  nodes {best['nodes']}", flush=True)

        run("tree_align", SamplerBackend(sampler, states, sampling), base)
        run("naive_align", NaiveBackend(naive_sampler, states, sampling), base)
        cross = RolloutConfig(**{**base.__dict__, "joint_mode": "cross"})
        run("tree_cross", SamplerBackend(sampler, states, sampling), cross)
        half = HalfSolved(env)
        run("tree_no_stop", SamplerBackend(sampler, states, sampling), base, half)
        stop = RolloutConfig(**{**base.__dict__, "termination_threshold": 0.5})
        run("tree_half_stop", SamplerBackend(sampler, states, sampling), stop, half)

    tree, naive = results["tree_align"], results["naive_align"]
    summary = {
        "tree_tok_s": tree["tok_s"], "naive_tok_s": naive["tok_s"],
        "speedup": tree["tok_s"] / naive["tok_s"],
        "compiles": sampler.num_compiles, "naive_compiles": naive_sampler.num_compiles,
        "env_seconds": tree["env_s"], "device_seconds": tree["device_s"],
        "cross_tok_s": results["tree_cross"]["tok_s"],
        "cross_nodes": results["tree_cross"]["nodes"],
        "termination_tokens_saved_fraction":
            1 - results["tree_half_stop"]["tokens"] / results["tree_no_stop"]["tokens"],
        "termination_device_saved_fraction":
            1 - results["tree_half_stop"]["device_s"] / results["tree_no_stop"]["device_s"],
        "tree_cpu_s": tree["cpu_s"], "naive_cpu_s": naive["cpu_s"],
        "cpu_speedup": (tree["tokens"] / tree["cpu_s"]) / (naive["tokens"] / naive["cpu_s"]),
        "config": {"tasks": args.tasks, "T": 2, "G": 4, "N": 2, "preset": args.preset,
                   "max_new_tokens": args.max_new_tokens, "devices": str(jax.devices())},
        "runs": results,
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}, indent=2))
    write_record(args.out, summary, stamp)


if __name__ == "__main__":
    main()
