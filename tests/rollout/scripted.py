"""Deterministic stand-ins for a policy, an environment and a tokenizer, so trees
can be rebuilt by brute force and checked branch by branch."""

from __future__ import annotations

import zlib

import numpy as np

from mtrl.rollout.environment import Environment, StepResult
from mtrl.rollout.backend import Contexts, PolicyBackend, Samples

EOS = 3


def digest(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


class CharTokenizer:
    eos_id = EOS
    pad_id = 0

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids) -> str:
        return "".join(chr(i) for i in ids if i != EOS)


def scripted_completion(agent: int, context: list[int], g: int) -> list[int]:
    """The g-th completion of `agent` after `context`: a function of the context only."""
    return [ord(c) for c in f"<a{agent}:{digest(agent, tuple(context)) % 997}:{g}>"] + [EOS]


class ScriptedBackend(PolicyBackend):
    """Histories as plain token lists; completions from `scripted_completion`."""

    def __init__(self):
        self.calls = []

    def begin(self, agent, prompts):
        return Contexts(tokens=[list(p) for p in prompts])

    def generate(self, agent, contexts, num_samples, max_new_tokens, key):
        self.calls.append(("generate", agent, len(contexts.tokens)))
        tokens, logprobs, histories = [], [], []
        for row, budget in zip(contexts.tokens, max_new_tokens):
            for g in range(num_samples):
                comp = scripted_completion(agent, row, g)[:budget]
                tokens.append(comp)
                logprobs.append(-np.ones(len(comp), np.float32))
                histories.append(row + comp)
        return Samples(tokens=tokens, logprobs=logprobs), Contexts(tokens=histories)

    def extend(self, agent, contexts, rows, new_tokens):
        self.calls.append(("extend", agent, len(rows)))
        return Contexts(tokens=[contexts.tokens[r] + list(t) for r, t in zip(rows, new_tokens)])


def scripted_reward(actions: tuple[str, ...], turn: int) -> float:
    return (digest(actions, turn) % 5) / 4.0


class ScriptedEnv(Environment):
    """State = the branch's joint actions so far; observations name the branch.
    With end_on_done, a step of reward 1.0 ends its episode (StepResult.ended)."""

    def __init__(self, num_agents: int, reward_fn=scripted_reward, end_on_done: bool = False):
        self.num_agents = num_agents
        self.reward_fn = reward_fn
        self.end_on_done = end_on_done

    def reset(self, task):
        return (task, ()), tuple(f"task {task} agent {a}" for a in range(self.num_agents))

    def step(self, states, actions, turn):
        out = []
        for (task, history), action in zip(states, actions):
            branch = history + (action,)
            obs = tuple(f"obs t{turn} a{a} {digest(task, branch) % 10007}"
                        for a in range(self.num_agents))
            reward = self.reward_fn(action, turn)
            out.append(StepResult(reward=reward, done=reward == 1.0, observations=obs,
                                  state=(task, branch), components={"scripted": reward},
                                  ended=self.end_on_done and reward == 1.0))
        return out


class TextPolicy(PolicyBackend):
    """Completions written by `choose(turn, g, history) -> text`: sample g of a node at
    `turn` (1-based), given the node's history decoded to text; stop token appended.
    Turns are counted per agent by generate calls (one per turn with env_groups=1)."""

    def __init__(self, tokenizer, choose):
        self.tokenizer = tokenizer
        self.choose = choose
        self.turns: dict[int, int] = {}

    def begin(self, agent, prompts):
        return Contexts(tokens=[list(p) for p in prompts])

    def generate(self, agent, contexts, num_samples, max_new_tokens, key):
        self.turns[agent] = turn = self.turns.get(agent, 0) + 1
        tokens, logprobs, histories = [], [], []
        for row in contexts.tokens:
            history = self.tokenizer.decode(row)
            for g in range(num_samples):
                comp = self.tokenizer.encode(self.choose(turn, g, history)) + [
                    self.tokenizer.eos_id]
                tokens.append(comp)
                logprobs.append(-np.ones(len(comp), np.float32))
                histories.append(row + comp)
        return Samples(tokens=tokens, logprobs=logprobs), Contexts(tokens=histories)

    def extend(self, agent, contexts, rows, new_tokens):
        return Contexts(tokens=[contexts.tokens[r] + list(t) for r, t in zip(rows, new_tokens)])


def solve_at(turn_of_success: int, right: str, wrong: str):
    """A chain policy (G = 1) that answers `wrong` until `turn_of_success`, then `right`."""
    return lambda turn, g, history: right if turn >= turn_of_success else wrong


def chain(env, task, choose, num_turns: int, tokenizer=None, max_context: int = 8192):
    """One task's G = 1 rollout (a chain) under `TextPolicy(choose)`."""
    from mtrl.rollout import RolloutConfig, rollout
    from mtrl.tokenizers import load_tokenizer
    tokenizer = tokenizer or load_tokenizer("byte")
    config = RolloutConfig(num_turns=num_turns, num_generations=1,
                           num_agents=env.num_agents, max_new_tokens=512,
                           max_context=max_context)
    import jax
    return rollout([task], env, TextPolicy(tokenizer, choose), tokenizer, config,
                   jax.random.key(0))


def chain_outcome(tree) -> tuple[int, bool, bool]:
    """(turns played, the last step ended its episode, the last step solved it)."""
    last = tree.turns[-1]
    return len(tree.turns), bool(last.ended[0, 0]), bool(last.done[0, 0])
