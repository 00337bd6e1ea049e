"""A multi-turn rollout of the same episodes through Tunix 0.1.7's agentic engine and through
mtrl's tree rollout, paired in one run.

    python -m bench.tunix_agentic --out /tmp/agentic.json \
        [--layers 4 --prompts 4 --samples 4 --turns 2 --new-tokens 32 --repeats 3]

Episodes: --prompts P random token-id prompts of --prompt-len tokens, --samples G episodes
per prompt, --turns T turns; between turns the environment answers the same fixed
"try again" observation (--obs-len token ids, identical on both sides); every turn samples
--new-tokens M tokens at temperature 1 (top-p 1) with no reachable stop token, so every
episode generates exactly T·M tokens on every side. SmolLM2-135M's shape (bench.tunix.SHAPE,
--layers of its 30), random float32 weights, no LoRA.

  tunix        (subprocess in Tunix's venv, `--worker`) P·G (ModelAgent, BaseTaskEnv with
               max_steps=T) pairs through `TrajectoryCollectEngine.collect_multiple`, whose
               model_call does what `agentic_rl_learner._model_call` does: the chat so far
               becomes one prompt string (a trivial template here: the messages' contents
               joined by spaces, i.e. exactly the token ids of the history), re-tokenized
               and sent to Tunix's `Sampler` for that one conversation (batch 1), left-padded
               to a fixed max_prompt_length so it compiles once. Episodes run concurrently
               in asyncio's executor threads, as in Tunix. Each call gets its own seed
               (Tunix's VanillaRollout passes rollout_config.seed, None by default, which
               the Sampler turns into PRNGKey(0) for every call).
  mtrl_chains  mtrl's `rollout` with the same P·G episodes: P·G tasks (each prompt G
               times, one sample per node), so turn 1 prefills each distinct prompt once
               and every later turn extends the parent's KV cache with the observation
               only; every node of a turn is one batched call.
  mtrl_naive   the same chains through mtrl's NaiveBackend: batched like mtrl_chains, but
               every turn re-encodes each whole history as Tunix does (what KV reuse saves,
               apart from batching).
  mtrl_tree    mtrl's tree as it trains: P tasks, G samples at every node (P·G^T leaves,
               P·(G + ... + G^T) completions); not the same episodes, reported beside.

The first call of each side compiles (reported as compile_s); then the timed calls of the
sides alternate round by round (order reversed every other round) for --repeats rounds.
Each call records wall s, the working process's CPU s and the 1-minute load; medians are
reported with tokens generated and tokens prefilled (real and, for Tunix, padded slots).
"""

from __future__ import annotations

import json
import os
import statistics
import sys

# Standard library only at the top, as in bench.tunix (the worker runs in Tunix's venv).
from bench.tunix import SHAPE, IdTokenizer, prompt_ids, timed, tunix_llama
from bench.workers import WorkerClient, parse_sides, reply, side_by_side_parser

ARMS = ("tunix", "mtrl_chains", "mtrl_naive", "mtrl_tree")


def observation_ids(length: int) -> list[int]:
    """The fixed 'try again' observation: token ids drawn once with seed 1."""
    return prompt_ids(1, length, SHAPE["vocab_size"], seed=1)[0]


def layout(prompts: int, samples: int, turns: int, prompt_len: int, obs_len: int,
           new_tokens: int) -> dict:
    """Token accounting of the episodes (no stop token: every turn generates M tokens).

    Turn t (1-based) of an episode sees a history of H_t = L + (t−1)(M + O) tokens.
      generated (tunix, chains)  = P·G·T·M
      tunix_prefill_tokens       = P·G·Σ_t H_t   (the whole chat re-encoded each turn)
      tunix_max_prompt           = H_T           (fixed padding: one compiled shape)
      tunix_prefill_slots        = P·G·T·H_T     (left-padded to H_T every call)
      chains_prefill_tokens      = P·L + P·G·(T−1)·O   (distinct prompts, then observations)
      tree_generated             = P·M·(G + G² + ... + G^T)
      tree_prefill_tokens        = P·L + P·O·(G + ... + G^(T−1))
    """
    history = [prompt_len + (t - 1) * (new_tokens + obs_len) for t in range(1, turns + 1)]
    episodes = prompts * samples
    branching = sum(samples ** t for t in range(1, turns + 1))
    return {"episodes": episodes, "history_per_turn": history,
            "generated": episodes * turns * new_tokens,
            "tunix_prefill_tokens": episodes * sum(history),
            "tunix_max_prompt": history[-1],
            "tunix_prefill_slots": episodes * turns * history[-1],
            "chains_prefill_tokens": prompts * prompt_len + episodes * (turns - 1) * obs_len,
            "tree_leaves": prompts * samples ** turns,
            "tree_generated": prompts * new_tokens * branching,
            "tree_prefill_tokens": prompts * prompt_len
            + prompts * obs_len * (branching - samples ** turns)}


def joined(messages) -> str:
    """The trivial chat template: message contents joined by spaces (empty ones dropped)."""
    return " ".join(m["content"] for m in messages if m["content"])


# ----------------------------------------------------------------- Tunix worker (its venv)

class TunixAgentic:
    """P·G (ModelAgent, TryAgainEnv) pairs through TrajectoryCollectEngine.collect_multiple."""

    def __init__(self, args):
        import threading

        from tunix.generate import sampler as sampler_lib
        from tunix.rl.agentic.environments import base_environment as env_lib

        self.args = args
        self.plan = layout(args.prompts, args.samples, args.turns, args.prompt_len,
                           args.obs_len, args.new_tokens)
        model, self.info = tunix_llama(args.layers or 30)
        self.max_prompt = self.plan["tunix_max_prompt"]
        self.sampler = sampler_lib.Sampler(model, IdTokenizer(), sampler_lib.CacheConfig(
            cache_size=self.max_prompt + args.new_tokens, num_layers=args.layers or 30,
            num_kv_heads=SHAPE["num_kv_heads"], head_dim=SHAPE["head_dim"]))
        self.prompts = [" ".join(map(str, p)) for p in
                        prompt_ids(args.prompts, args.prompt_len, SHAPE["vocab_size"])]
        observation = " ".join(map(str, observation_ids(args.obs_len)))
        turns = args.turns

        class TryAgainEnv(env_lib.BaseTaskEnv):
            def __init__(self, task):
                super().__init__(task, max_steps=turns)

            def _initial_observation(self):
                return self.task["prompt"]

            def _step_impl(self, action):
                return env_lib.EnvStepResult(observation=observation, reward=0.0, done=False,
                                             info={})

        self.env_class, self.lock = TryAgainEnv, threading.Lock()
        self.info["executor_workers"] = min(32, (os.cpu_count() or 1) + 4)

    def model_call(self, messages, env=None, max_generation_steps=None, **_):
        """agentic_rl_learner._model_call for one conversation, at batch 1."""
        from tunix.rl.rollout import base_rollout
        del env, max_generation_steps  # no response budget: every turn samples M tokens
        text = joined(messages)
        with self.lock:
            seed = self.seed
            self.seed += 1
        out = self.sampler([text], max_generation_steps=self.args.new_tokens,
                           max_prompt_length=self.max_prompt, temperature=1.0, top_p=1.0,
                           seed=seed, eos_tokens=[SHAPE["vocab_size"]])
        with self.lock:
            self.counts["calls"] += 1
            self.counts["generated"] += len(out.tokens[0])
            self.counts["prefill_tokens"] += len(text.split())
            self.counts["prefill_slots"] += self.max_prompt
        return base_rollout.RolloutOutput(text=out.text, logits=out.logits, tokens=out.tokens,
                                          left_padded_prompt_tokens=out.padded_prompt_tokens,
                                          logprobs=out.logprobs)

    def episodes(self, round_index: int) -> dict:
        import asyncio

        from tunix.rl.agentic.agents.model_agent import ModelAgent
        from tunix.rl.agentic.trajectory.trajectory_collect_engine import TrajectoryCollectEngine

        self.seed = (round_index + 1) * 1_000_003  # round -1 compiles
        self.counts = dict(calls=0, generated=0, prefill_tokens=0, prefill_slots=0)
        pairs = [(ModelAgent(system_prompt=""), self.env_class({"prompt": p}))
                 for p in self.prompts for _ in range(self.args.samples)]

        async def collect():
            done = {}
            async for i, trajectory in TrajectoryCollectEngine.collect_multiple(
                    pairs, model_call=self.model_call, timeout=1e9, mode="Trajectory"):
                done[i] = trajectory
            return done

        trajectories = asyncio.run(collect())
        steps = sorted({len(t.steps) for t in trajectories.values()})
        finals = {joined(t.steps[-1].chat_completions) for t in trajectories.values()}
        return {**self.counts, "episodes": len(trajectories), "steps_per_episode": steps,
                "distinct_episodes": len(finals),
                "statuses": sorted({t.status.name for t in trajectories.values()})}


def worker(args) -> None:
    side = TunixAgentic(args)
    reply(side.info)
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] != "episodes":
            raise ValueError(f"unknown op {request['op']!r}")
        reply(timed(lambda: side.episodes(request["round"])))


def worker_args(args) -> list[str]:
    """The worker's command line (WorkerClient runs this module with it)."""
    return ["--worker"] + [f"--{k.replace('_', '-')}={getattr(args, k)}" for k in (
        "layers", "prompts", "samples", "turns", "prompt_len", "obs_len", "new_tokens")]


# ----------------------------------------------------------------- mtrl side (mtrl's venv)

def id_tokenizer():
    """mtrl's Tokenizer over space-separated ids; EOS = the vocabulary size (never sampled)."""
    from mtrl.tokenizers.base import Tokenizer, as_id_list

    class Ids(Tokenizer):
        vocab_size, eos_id, pad_id, bos_id = SHAPE["vocab_size"], SHAPE["vocab_size"], 0, None

        def encode(self, text, *, add_bos=False):
            return [int(t) for t in text.split()]

        def decode(self, ids):
            return " ".join(map(str, as_id_list(ids)))

    return Ids()


def try_again_env(observation: str):
    """mtrl's environment protocol, one agent: the task is the prompt; every step answers
    `observation` with reward 0 and never ends the episode."""
    from mtrl.rollout.environment import Environment, StepResult

    class TryAgain(Environment):
        num_agents = 1

        def reset(self, task):
            return task, (task,)

        def step(self, states, actions, turn):
            return [StepResult(reward=0.0, done=False, observations=(observation,), state=s)
                    for s in states]

    return TryAgain()


class MtrlAgentic:
    """mtrl's rollout (SamplerBackend: KV reuse; NaiveBackend: re-encoding) over the chains
    or the tree; each arm has its own Sampler (own compiled programs), the weights shared."""

    def __init__(self, args, model, tree: bool, naive: bool = False):
        import jax
        from flax import nnx

        from mtrl.rollout import RolloutConfig
        from mtrl.rollout.sampler_backend import NaiveBackend, SamplerBackend
        from mtrl.sampling.sampler import Sampler

        self.tokenizer = id_tokenizer()
        self.sampler = Sampler(model)
        prompts = [" ".join(map(str, p)) for p in
                   prompt_ids(args.prompts, args.prompt_len, SHAPE["vocab_size"])]
        self.tasks = prompts if tree else [p for p in prompts for _ in range(args.samples)]
        self.config = RolloutConfig(
            num_turns=args.turns, num_generations=args.samples if tree else 1, num_agents=1,
            max_new_tokens=args.new_tokens, temperature=1.0, top_p=1.0,
            max_context=args.prompt_len + args.turns * (args.new_tokens + args.obs_len) + 8)
        self.backend = (NaiveBackend if naive else SamplerBackend)(self.sampler, [nnx.split(model)[1]],
                                      self.config.sampling_config(
                                          stop_token_ids=(self.tokenizer.eos_id,), pad_id=0))
        self.env = try_again_env(" ".join(map(str, observation_ids(args.obs_len))))
        self.key = jax.random.key

    def episodes(self, round_index: int) -> dict:
        from mtrl.rollout import rollout

        def run():
            before = dict(self.sampler.stats)
            tree = rollout(self.tasks, self.env, self.backend, self.tokenizer, self.config,
                           self.key(round_index))
            m = tree.metrics
            return {"generated": int(m["rollout/generated_tokens"]),
                    "episodes": int(m["rollout/leaves"]),
                    "nodes": [int(m[f"rollout/turn{t}_nodes"]) for t in
                              range(1, self.config.num_turns + 1)],
                    "prefill_tokens": self.sampler.stats["prefill_tokens"]
                    - before.get("prefill_tokens", 0),
                    "compiles": self.sampler.num_compiles,
                    "distinct_last_completions": len({tuple(c) for c in
                                                      tree.turns[-1].completions[0]})}
        return timed(run)


def summarize(calls: list[dict]) -> dict:
    wall = statistics.median(c["wall_s"] for c in calls)
    cpu = statistics.median(c["cpu_s"] for c in calls)
    tokens = calls[0]["generated"]
    return {"wall_s": wall, "cpu_s": cpu, "generated": tokens, "episodes": calls[0]["episodes"],
            "prefill_tokens": calls[0]["prefill_tokens"], "tok_s": tokens / wall,
            "tok_per_cpu_s": tokens / cpu, "episodes_per_cpu_s": calls[0]["episodes"] / cpu,
            "calls": calls}


def main() -> None:
    parser = side_by_side_parser(__doc__)
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--prompt-len", type=int, default=48)
    parser.add_argument("--obs-len", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--arms", default=",".join(ARMS))
    args = parse_sides(parser)
    if args.worker:
        return worker(args)
    import jax

    from flax import nnx

    from mtrl.evidence.bench_record import write_record
    from mtrl.evidence.stamp import machine_stamp
    from mtrl.models import Transformer, preset

    stamp = machine_stamp()

    base = preset("smollm2-135m", param_dtype="float32",
                  **({"num_layers": args.layers} if args.layers else {})
                  ).replace(dtype="float32", matmul="xla")
    arms = args.arms.split(",")
    plan = layout(args.prompts, args.samples, args.turns, args.prompt_len, args.obs_len,
                  args.new_tokens)
    result = {"config": {**{k: v for k, v in vars(args).items() if k not in ("out", "worker")},
                         "layers": base.num_layers, "jax": jax.__version__,
                         "cpus": os.cpu_count(), "sampling": "temperature 1, top-p 1",
                         "command": " ".join(sys.argv)},
              "layout": plan, "compile_s": {}}
    sides, model = {}, None
    for arm in arms:
        if arm == "tunix":
            sides[arm] = client = WorkerClient(args.tunix_python, "bench.tunix_agentic",
                                               worker_args(args))
            result["tunix"] = client.info
        else:
            model = model or Transformer(base, rngs=nnx.Rngs(0))  # one copy for both arms
            sides[arm] = MtrlAgentic(args, model, tree=arm == "mtrl_tree",
                                     naive=arm == "mtrl_naive")
    call = {arm: (lambda r, c=side: c.call(op="episodes", round=r)) if arm == "tunix"
            else side.episodes for arm, side in sides.items()}
    for arm in arms:  # first calls compile
        result["compile_s"][arm] = call[arm](-1)["wall_s"]
    print("compiled:", json.dumps(result["compile_s"]), flush=True)
    calls = {arm: [] for arm in arms}
    for r in range(args.repeats):
        for arm in (arms if r % 2 == 0 else arms[::-1]):
            calls[arm].append(call[arm](r))
            c = calls[arm][-1]
            print(f"round {r} {arm}: {c['wall_s']:.2f} s wall, {c['cpu_s']:.2f} CPU s, "
                  f"{c['generated']} tokens, load {c['load1']:.1f}", flush=True)
    if "tunix" in sides:
        sides["tunix"].close()
    result["sides"] = {arm: summarize(calls[arm]) for arm in arms}
    check_counts(result["sides"], plan)
    if "tunix" in sides:  # per CPU s: generated tokens, and episodes (the tree has more)
        tunix = result["sides"]["tunix"]
        result["vs_tunix"] = {arm: {key: row[key] / tunix[key] for key in
                                    ("tok_per_cpu_s", "episodes_per_cpu_s")}
                              for arm, row in result["sides"].items() if arm != "tunix"}
    for arm, row in result["sides"].items():
        print(f"{arm:>12}: {row['wall_s']:.2f} s wall, {row['cpu_s']:.2f} CPU s, "
              f"{row['generated']} tokens ({row['tok_per_cpu_s']:.1f} per CPU s), "
              f"{row['episodes']} episodes, prefilled {row['prefill_tokens']}", flush=True)
    print("vs Tunix (per CPU s):", json.dumps(result.get("vs_tunix")))
    write_record(args.out, result, stamp)


def check_counts(sides: dict, plan: dict) -> None:
    """Every call generated and prefilled what `layout` says (else the comparison is off)."""
    want = {"tunix": (plan["generated"], plan["tunix_prefill_tokens"], plan["episodes"]),
            "mtrl_chains": (plan["generated"], plan["chains_prefill_tokens"], plan["episodes"]),
            "mtrl_naive": (plan["generated"], plan["tunix_prefill_tokens"], plan["episodes"]),
            "mtrl_tree": (plan["tree_generated"], plan["tree_prefill_tokens"],
                          plan["tree_leaves"])}
    for arm, row in sides.items():
        for c in row["calls"]:
            got = (c["generated"], c["prefill_tokens"], c["episodes"])
            if got != want[arm]:
                raise RuntimeError(f"{arm}: generated, prefilled, episodes {got} != {want[arm]}")


if __name__ == "__main__":
    main()
